package testutil

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Logs records what a plugin logs through the logger Logger returns, so that a test can
// check that a warning is given, and given once, or that a secret is never logged. It is
// the one log capturer of the tests and is safe for concurrent use.
type Logs struct {
	mu      sync.Mutex
	records []string
}

// Logger returns a logger whose records Logs keeps, at every level.
func (l *Logs) Logger() *slog.Logger { return slog.New(&logsHandler{logs: l}) }

// Warnings returns the warnings logged so far, each as "message key=value ...".
func (l *Logs) Warnings() []string { return l.atLevel(slog.LevelWarn) }

// Errors returns the errors logged so far, each as "message key=value ...".
func (l *Logs) Errors() []string { return l.atLevel(slog.LevelError) }

// All returns every record logged so far, each as "LEVEL message key=value ...".
func (l *Logs) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.records...)
}

// String returns every record logged so far, one a line, for a test that looks for a piece
// of text in whatever was logged.
func (l *Logs) String() string { return strings.Join(l.All(), "\n") }

func (l *Logs) atLevel(level slog.Level) []string {
	var out []string
	prefix := level.String() + " "
	for _, r := range l.All() {
		if rest, ok := strings.CutPrefix(r, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

type logsHandler struct {
	logs  *Logs
	attrs []slog.Attr
}

func (h *logsHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logsHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	write := func(a slog.Attr) bool {
		// Resolved as a real handler resolves it, so that a value that logs itself
		// (slog.LogValuer, such as morse.Secret) shows what a real log would show.
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	h.logs.records = append(h.logs.records, b.String())
	return nil
}

func (h *logsHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logsHandler{logs: h.logs, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *logsHandler) WithGroup(string) slog.Handler { return h }
