package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// journalStderr reports whether stderr is connected to the journal. systemd sets
// JOURNAL_STREAM to the "device:inode" of the stream it hands a service (systemd.exec(5));
// a wrapper that sends stderr elsewhere leaves the variable set but changes the inode, and
// then the plain format with timestamps is what the reader needs.
func journalStderr(stderr io.Writer) bool {
	f, ok := stderr.(*os.File)
	return ok && isJournalStream(os.Getenv("JOURNAL_STREAM"), f)
}

// isJournalStream reports whether f is the stream JOURNAL_STREAM (as "dev:inode") names.
func isJournalStream(env string, f *os.File) bool {
	devText, inoText, ok := strings.Cut(env, ":")
	if !ok {
		return false
	}
	dev, err1 := strconv.ParseUint(devText, 10, 64)
	ino, err2 := strconv.ParseUint(inoText, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	// Dev is narrower than 64 bits on some platforms, hence the conversions.
	return ok && uint64(st.Dev) == dev && uint64(st.Ino) == ino
}

// handlerFunc builds a handler of one log format.
type handlerFunc func(w io.Writer, opts *slog.HandlerOptions) slog.Handler

// newJournalHandler writes the lines of the format that newFormat builds for the journal:
// each line starts with the syslog priority prefix of sd-daemon(3), such as "<4>" for a
// warning, so that `journalctl -p warning` selects by level, and carries no time, which the
// journal records itself.
func newJournalHandler(w io.Writer, opts *slog.HandlerOptions, newFormat handlerFunc) slog.Handler {
	o := *opts
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		if opts.ReplaceAttr != nil {
			return opts.ReplaceAttr(groups, a)
		}
		return a
	}
	out := &priorityWriter{w: w}
	return &journalHandler{inner: newFormat(out, &o), out: out}
}

// journalHandler sets the priority of the record its format's handler is about to write.
// Every handler derived with WithAttrs or WithGroup shares one priorityWriter, and its lock
// keeps a record's priority with that record's line.
type journalHandler struct {
	inner slog.Handler
	out   *priorityWriter
}

func (h *journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.prefix = syslogPriority(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h *journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &journalHandler{inner: h.inner.WithAttrs(as), out: h.out}
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	return &journalHandler{inner: h.inner.WithGroup(name), out: h.out}
}

// priorityWriter puts the current prefix before each write. slog's text handler writes a
// record as one Write, so the prefix lands at the start of its line; it is written in the
// same Write so that nothing else on the stream can come between the two.
type priorityWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *priorityWriter) Write(b []byte) (int, error) {
	p.buf = append(append(p.buf[:0], p.prefix...), b...)
	if _, err := p.w.Write(p.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// syslogPriority maps slog's levels to syslog's: err, warning, info and debug. Levels in
// between round down, so a level above Warn but below Error is still a warning.
func syslogPriority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>"
	case l >= slog.LevelWarn:
		return "<4>"
	case l >= slog.LevelInfo:
		return "<6>"
	default:
		return "<7>"
	}
}
