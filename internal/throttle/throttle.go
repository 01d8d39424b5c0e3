// Package throttle holds back repeated log lines: one per period gets through, saying how
// many similar ones it stands for. Every part of morse that logs per event uses it, with one
// log key, so that operators see one shape of message everywhere.
package throttle

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Throttle lets one event through per period and counts those it holds back, so that a
// flood of bad input produces one log line per period that says how much it stands for,
// rather than a line per bad input that would flood the journal as well. It is safe for
// concurrent use.
type Throttle struct {
	every      time.Duration
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// New returns a throttle that lets one event through per every.
func New(every time.Duration) *Throttle { return &Throttle{every: every} }

// Allow reports whether an event at now may be logged, and if so how many were held back
// since the last one that was.
func (t *Throttle) Allow(now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		return false, 0
	}
	t.last, suppressed, t.suppressed = now, t.suppressed, 0
	return true, suppressed
}

// SuppressedKey is the log key that gives how many similar messages a throttle held back.
const SuppressedKey = "similar_suppressed"

// Log writes msg at level through l when the throttle allows it, adding the number of
// similar messages held back under SuppressedKey.
func (t *Throttle) Log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	ok, suppressed := t.Allow(time.Now())
	if !ok {
		return
	}
	l.Log(context.Background(), level, msg, append(args, SuppressedKey, suppressed)...)
}
