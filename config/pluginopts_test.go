package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestTelegrafCommonOptions: every common option Telegraf 1.39.3's config.go reads for an
// input, output, processor and aggregator loads, with its value where morse keeps it.
func TestTelegrafCommonOptions(t *testing.T) {
	f, err := loadText(t, `
[[inputs.i]]
  collection_jitter = "0s"
  precision = "1ms"
  time_source = "collection_end"
  startup_error_behavior = "retry"
  log_level = "debug"
  name_override = "n"
[[outputs.o]]
  name_prefix = "p_"
  name_suffix = "_s"
  startup_error_behavior = "ignore"
  log_level = "ERROR"
[[processors.p]]
  log_level = "trace"
[[aggregators.a]]
  name_override = "agg"
  log_level = "warn"
`)
	require.NoError(t, err)
	in := f.Inputs[0].Input
	require.NotNil(t, in.CollectionJitter)
	require.Equal(t, morse.Duration(0), *in.CollectionJitter)
	require.Equal(t, morse.Duration(time.Millisecond), in.Precision)
	require.Equal(t, TimeCollectionEnd, in.TimeSource)
	require.Equal(t, StartupRetry, in.StartupErrorBehavior)
	require.Equal(t, LogLevel("debug"), in.LogLevel)
	require.Equal(t, Rename{NameOverride: "n"}, in.Rename)
	out := f.Outputs[0].Output
	require.Equal(t, Rename{NamePrefix: "p_", NameSuffix: "_s"}, out.Rename)
	require.Equal(t, StartupIgnore, out.StartupErrorBehavior)
	lv, ok := out.LogLevel.Level()
	require.True(t, ok)
	require.Equal(t, "ERROR", lv.String())
	lv, _ = f.Processors[0].Processor.LogLevel.Level()
	require.Equal(t, LevelTrace, lv)
	require.Equal(t, "agg", f.Aggregators[0].Aggregator.NameOverride)
	require.Equal(t, LogLevel("warn"), f.Aggregators[0].Aggregator.LogLevel)
}

// TestCommonOptionErrors: a bad value of each new option is reported with its file, line
// and key, all of them in one run.
func TestCommonOptionErrors(t *testing.T) {
	_, err := loadText(t, `[[inputs.i]]
  interval = "10s"
  collection_jitter = "-1s"
  precision = "-1ms"
  time_source = "gather"
  startup_error_behavior = "explode"
  log_level = "loud"
[[inputs.j]]
  collection_jitter = "10s"
[[inputs.k]]
  interval = "5s"
  collection_jitter = "5s"
[[outputs.o]]
  log_level = 3
  buffer_disk_sync = 1
`)
	require.Error(t, err)
	want := []string{
		`a.conf:3: inputs.i.collection_jitter: must not be negative, got -1s`,
		`a.conf:4: inputs.i.precision: must not be negative, got -1ms`,
		`a.conf:5: inputs.i.time_source: "gather": must be "metric", "collection_start", "collection_end"`,
		`a.conf:6: inputs.i.startup_error_behavior: "explode": must be "error", "retry", "ignore" or "probe"`,
		`a.conf:7: inputs.i.log_level: "loud": must be "error", "warn", "info", "debug" or "trace"`,
		`a.conf:9: inputs.j.collection_jitter: 10s must be smaller than interval (10s, from [agent])`,
		`a.conf:11: inputs.k.interval: 5s must be greater than collection_jitter (5s)`,
		`a.conf:14: outputs.o.log_level: expected a string, got an integer`,
		`a.conf:15: outputs.o.buffer_disk_sync: expected an interval, "never", true or false, got int64`,
	}
	require.Equal(t, strings.Join(want, "\n"), err.Error())
}

// TestBufferDiskSyncBoolean: Telegraf's boolean buffer_disk_sync loads: true is morse's
// default interval, false is "never".
func TestBufferDiskSyncBoolean(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  time.Duration
	}{{"true", time.Second}, {"false", 0}, {`"250ms"`, 250 * time.Millisecond}, {`"never"`, 0}} {
		f, err := loadText(t, "[agent]\n  buffer_disk_sync = "+tt.value+"\n[[outputs.o]]\n")
		require.NoError(t, err, tt.value)
		got, err := f.Agent.SyncInterval()
		require.NoError(t, err)
		require.Equal(t, tt.want, got, tt.value)
	}
}

// TestInputJitterAgainstItsOwnInterval: an input's collection_jitter is checked against the
// input's own interval, at load and when the agent inherits [agent] settings, so that "0s"
// can turn off an agent jitter longer than the input's interval.
func TestInputJitterAgainstItsOwnInterval(t *testing.T) {
	f, err := loadText(t, "[agent]\n  interval = \"2s\"\n[[inputs.i]]\n  interval = \"10s\"\n  collection_jitter = \"5s\"\n")
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, f.Inputs[0].Interval)

	c := DefaultConfig()
	c.Agent.Interval, c.Agent.CollectionJitter = morse.Duration(10*time.Second), morse.Duration(5*time.Second)
	off := morse.Duration(0)
	in := c.AddInput("fast", cfgQuietInput{})
	in.Common.Interval, in.Common.CollectionJitter = morse.Duration(2*time.Second), &off
	require.NoError(t, c.Resolve())
	in.Common.CollectionJitter = nil
	require.EqualError(t, c.Resolve(), "code: inputs[0].interval: 2s must be greater than collection_jitter (5s, from [agent])")
}
