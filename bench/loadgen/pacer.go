package loadgen

import (
	"context"
	"math"
	"sync"
	"time"
)

// Clock is the time source of the pacer. Tests inject a fake one so that rate limits can be
// checked on counts, without depending on how fast the machine is.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or returns ctx.Err() if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the wall clock.
type realClock struct{}

// Now returns the wall-clock time.
func (realClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer, so that a cancelled run stops at once instead of after the pause.
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pacer hands out the sequence numbers of the lines to send. It enforces all three limits in
// one place: the line count, the deadline and the rate. Line k (counting from 0) is due at
// start + k/rate, so the average rate holds over any interval however the lines are split
// among connections, and a connection that falls behind catches up without bursting past
// the schedule.
type pacer struct {
	clock    Clock
	start    time.Time
	deadline time.Time // no line is handed out at or after it
	rate     float64   // lines per second; 0 means as fast as possible
	limit    int64     // total lines; 0 means no limit

	mu   sync.Mutex
	next int64 // the next sequence number to hand out
}

func newPacer(clock Clock, rate float64, limit int64, duration time.Duration) *pacer {
	start := clock.Now()
	return &pacer{clock: clock, start: start, deadline: start.Add(duration), rate: rate, limit: limit}
}

// claim reserves up to want lines and waits until the first of them is due. It returns the
// first sequence number and the count; a count of 0 means the run is over, because the
// line limit is reached, the deadline has come, or ctx ended.
func (p *pacer) claim(ctx context.Context, want int) (seq int64, n int) {
	if ctx.Err() != nil {
		return 0, 0
	}
	p.mu.Lock()
	seq = p.next
	n = want
	if p.limit > 0 && seq+int64(n) > p.limit {
		n = int(p.limit - seq)
	}
	due := p.start
	if p.rate > 0 {
		due = p.start.Add(time.Duration(math.Round(float64(seq) * float64(time.Second) / p.rate)))
	}
	if n <= 0 || !due.Before(p.deadline) {
		p.mu.Unlock()
		return 0, 0
	}
	p.next += int64(n)
	p.mu.Unlock()

	now := p.clock.Now()
	if !now.Before(p.deadline) {
		return 0, 0
	}
	if wait := due.Sub(now); wait > 0 {
		if p.clock.Sleep(ctx, wait) != nil {
			return 0, 0
		}
	}
	return seq, n
}
