package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// TestTelegrafTextGolden: logformat = "text" writes Telegraf's lines for every level and
// every kind of plugin, with an alias and without, in UTC and in log_with_timezone's zone.
// The layout is Telegraf 1.39.3's logger/text_logger.go: RFC 3339 time, the level's
// indicator, "[kind.name]" or "[kind.name::alias]", the message.
func TestTelegrafTextGolden(t *testing.T) {
	at := time.Date(2026, 11, 27, 20, 0, 0, 123456789, time.UTC)
	levels := []slog.Level{slog.LevelError, slog.LevelWarn, slog.LevelInfo, slog.LevelDebug, slog.LevelDebug - 4}
	var buf bytes.Buffer
	for _, agent := range []string{"", `log_with_timezone = "America/Chicago"`} {
		logger, closeLog, err := newLogger(agentFrom(t, "debug = true\n"+agent), false, &buf)
		require.NoError(t, err)
		h := slog.New(&traceAll{logger.Handler()})
		sources := []*slog.Logger{
			h.With("plugin", "inputs.cpu"), h.With("plugin", "outputs.influxdb"),
			h.With("plugin", "processors.rename"), h.With("plugin", "aggregators.basicstats"),
			h, h.With("plugin", "outputs.influxdb").With("alias", "primary"),
		}
		for _, l := range sources {
			for _, lv := range levels {
				r := slog.NewRecord(at, lv, "message", 0)
				require.NoError(t, l.Handler().Handle(context.Background(), r))
			}
		}
		r := slog.NewRecord(at, slog.LevelWarn, "write failed, will retry", 0)
		r.AddAttrs(slog.Any("error", errors.New(`post "http://127.0.0.1:8086/write": connection refused`)),
			slog.Int("attempt", 3), slog.String("empty", ""), slog.Group("g", slog.Int("n", 1)))
		require.NoError(t, sources[1].WithGroup("w").Handler().Handle(context.Background(), r))
		closeLog()
	}
	testutil.Golden(t, "testdata/telegraf-text.golden", buf.Bytes())
}

// traceAll lets every level through, so that the golden holds a plugin's trace lines.
type traceAll struct{ slog.Handler }

func (traceAll) Enabled(context.Context, slog.Level) bool { return true }
func (h traceAll) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceAll{h.Handler.WithAttrs(as)}
}
func (h traceAll) WithGroup(name string) slog.Handler { return &traceAll{h.Handler.WithGroup(name)} }
