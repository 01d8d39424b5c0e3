package main

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// telegrafHandler writes Telegraf's text log format (its logger/text_logger.go), so that an
// operator's grep for "E! [outputs.influxdb]" finds morse's lines as it found Telegraf's:
//
//	2026-11-27T20:00:00Z E! [outputs.influxdb] write failed, will retry error="..." attempt=3
//
// The time is RFC 3339 to the second in the zone of log_with_timezone, then the level's
// indicator (E! W! I! D! T!), then "[kind.name]" or "[kind.name::alias]" of the plugin that
// logs, "[agent]" for the agent itself, then the message. Telegraf's plugins format their
// details into the message; morse's records carry them as attributes, which follow the
// message as key=value pairs, quoted as slog's text handler quotes them.
type telegrafHandler struct {
	out     *lockedWriter
	opts    slog.HandlerOptions
	source  string // the plugin's "kind.name", from the "plugin" attribute; "" for the agent
	alias   string // from the "alias" attribute
	attrs   []byte // the other attributes given with WithAttrs, formatted
	group   string // the open groups' names, each followed by a dot
	noGroup bool   // no group is open: "plugin" and "alias" name the source
}

// lockedWriter keeps each record's line whole when loggers derived from one handler write
// at once.
type lockedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newTelegrafHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	return &telegrafHandler{out: &lockedWriter{w: w}, opts: *opts, noGroup: true}
}

// Enabled implements slog.Handler.
func (h *telegrafHandler) Enabled(_ context.Context, l slog.Level) bool {
	least := slog.LevelInfo
	if h.opts.Level != nil {
		least = h.opts.Level.Level()
	}
	return l >= least
}

// WithAttrs implements slog.Handler.
func (h *telegrafHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]byte(nil), h.attrs...)
	for _, a := range as {
		if h.noGroup && a.Key == "plugin" {
			c.source = a.Value.String()
			continue
		}
		if h.noGroup && a.Key == "alias" {
			c.alias = a.Value.String()
			continue
		}
		c.attrs = appendAttr(c.attrs, h.group, a)
	}
	return &c
}

// WithGroup implements slog.Handler.
func (h *telegrafHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group += name + "."
	c.noGroup = false
	return &c
}

// Handle implements slog.Handler.
func (h *telegrafHandler) Handle(_ context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	b := h.out.buf[:0]
	if t, ok := h.time(r.Time); ok {
		b = t.AppendFormat(b, time.RFC3339)
		b = append(b, ' ')
	}
	source, alias := h.source, h.alias
	if h.noGroup { // a record may name its plugin itself
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "plugin":
				source = a.Value.String()
			case "alias":
				alias = a.Value.String()
			}
			return true
		})
	}
	b = append(b, levelIndicator(r.Level)...)
	b = append(b, " ["...)
	b = append(b, cmp.Or(source, "agent")...)
	if alias != "" {
		b = append(b, "::"...)
		b = append(b, alias...)
	}
	b = append(b, "] "...)
	b = append(b, r.Message...)
	b = append(b, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		if !h.noGroup || a.Key != "plugin" && a.Key != "alias" {
			b = appendAttr(b, h.group, a)
		}
		return true
	})
	b = append(b, '\n')
	h.out.buf = b
	_, err := h.out.w.Write(b)
	return err
}

// time is the record's time as ReplaceAttr gives it (in the zone of log_with_timezone), or
// false when ReplaceAttr leaves it out, as the journal's handler does.
func (h *telegrafHandler) time(t time.Time) (time.Time, bool) {
	if t.IsZero() {
		return t, false
	}
	a := slog.Time(slog.TimeKey, t)
	if h.opts.ReplaceAttr != nil {
		a = h.opts.ReplaceAttr(nil, a)
	}
	if a.Key == "" {
		return t, false
	}
	if rt, ok := a.Value.Any().(time.Time); ok {
		return rt, true
	}
	return t, true
}

// levelIndicator is Telegraf's mark of a level: levels between two of slog's round down,
// and anything below debug is a plugin's log_level = "trace".
func levelIndicator(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "E!"
	case l >= slog.LevelWarn:
		return "W!"
	case l >= slog.LevelInfo:
		return "I!"
	case l >= slog.LevelDebug:
		return "D!"
	default:
		return "T!"
	}
}

// appendAttr appends " key=value", a group's attributes each under "group.key".
func appendAttr(b []byte, group string, a slog.Attr) []byte {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			group += a.Key + "."
		}
		for _, ga := range v.Group() {
			b = appendAttr(b, group, ga)
		}
		return b
	}
	if a.Key == "" {
		return b
	}
	b = append(b, ' ')
	b = appendText(b, group+a.Key)
	b = append(b, '=')
	var s string
	switch v.Kind() {
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			s = err.Error()
		} else {
			s = v.String()
		}
	default:
		s = v.String()
	}
	return appendText(b, s)
}

// appendText appends s, quoted when slog's text handler would quote it: empty, or holding a
// space, '=', '"' or a character that does not print.
func appendText(b []byte, s string) []byte {
	if s == "" || strings.IndexFunc(s, func(r rune) bool {
		return r == ' ' || r == '=' || r == '"' || !unicode.IsPrint(r)
	}) >= 0 {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}
