package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/logrotate"
)

// newLogger builds the logger the [agent] table and --debug ask for, with Telegraf's keys:
// logfile (rotated as the logfile_rotation_* keys say), logformat "text" (Telegraf's lines,
// telegraflog.go), "logfmt" (slog's key=value lines) or "structured" (one JSON object per
// line, the message under structured_log_message_key), and log_with_timezone for the times
// (UTC when empty, as in Telegraf). When stderr is the journal and the format is text or
// logfmt, lines carry a syslog priority and no time (journal.go).
func newLogger(ac config.AgentConfig, debug bool, stderr io.Writer) (*slog.Logger, func(), error) {
	level := slog.LevelInfo
	switch {
	case debug || ac.Debug:
		level = slog.LevelDebug
	case ac.Quiet:
		level = slog.LevelError
	}
	loc, err := ac.Location()
	if err != nil {
		return nil, nil, fmt.Errorf("log_with_timezone: %w", err)
	}
	w, closeFn := stderr, func() {}
	file := ac.File(ac.Logfile)
	if file != "" {
		f, err := logrotate.Open(file, logrotate.Options{
			Interval: time.Duration(ac.RotationInterval), MaxSize: int64(ac.RotationMaxSize),
			MaxArchives: ac.RotationMaxArchives,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("logfile: %w", err)
		}
		w, closeFn = f, func() { _ = f.Close() }
	}
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: logAttrs(loc, ac)}
	if ac.Format == config.LogFormatStructured {
		return slog.New(slog.NewJSONHandler(w, hopts)), closeFn, nil
	}
	format := handlerFunc(newTelegrafHandler)
	if ac.Format == config.LogFormatLogfmt {
		format = newLogfmtHandler
	}
	if file == "" && journalStderr(stderr) {
		return slog.New(newJournalHandler(w, hopts, format)), closeFn, nil
	}
	return slog.New(format(w, hopts)), closeFn, nil
}

// newLogfmtHandler writes slog's key=value lines, logformat = "logfmt".
func newLogfmtHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	return slog.NewTextHandler(w, opts)
}

// logAttrs puts the record's time in the configured zone, names the trace level and, for
// structured logs, puts the message under structured_log_message_key.
func logAttrs(loc *time.Location, ac config.AgentConfig) func([]string, slog.Attr) slog.Attr {
	msgKey := ""
	if ac.Format == config.LogFormatStructured && ac.MessageKey != "" {
		msgKey = ac.MessageKey
	}
	return func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) > 0 {
			return a
		}
		switch a.Key {
		case slog.TimeKey:
			if t, ok := a.Value.Any().(time.Time); ok {
				a.Value = slog.TimeValue(t.In(loc))
			}
		case slog.MessageKey:
			if msgKey != "" {
				a.Key = msgKey
			}
		case slog.LevelKey:
			// A plugin's log_level = "trace" logs below debug, under Telegraf's name.
			if l, ok := a.Value.Any().(slog.Level); ok && l < slog.LevelDebug {
				a.Value = slog.StringValue("TRACE")
			}
		}
		return a
	}
}
