package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// AgentConfig is the [agent] table: the settings that every plugin inherits unless it
// overrides them.
type AgentConfig struct {
	// Interval is how often inputs gather.
	Interval morse.Duration `toml:"interval"`
	// RoundInterval aligns gathering to multiples of Interval (:00, :10, ...).
	RoundInterval bool `toml:"round_interval"`
	// CollectionJitter delays each gather by a random time up to this much, so that many
	// inputs or hosts do not all hit a shared resource at once.
	CollectionJitter morse.Duration `toml:"collection_jitter"`
	// CollectionOffset shifts every gather by this much past its mark, as Telegraf's does, so
	// that inputs querying one constrained device can be scheduled apart by hand.
	CollectionOffset morse.Duration `toml:"collection_offset"`
	// FlushInterval is how often outputs write.
	FlushInterval morse.Duration `toml:"flush_interval"`
	// FlushJitter spreads each flush uniformly over FlushInterval ± FlushJitter.
	FlushJitter morse.Duration `toml:"flush_jitter"`
	// MetricBatchSize is the most metrics in one write; a buffer this full flushes at once.
	MetricBatchSize int `toml:"metric_batch_size"`
	// MetricBufferLimit is how many metrics each output holds before evicting the oldest.
	MetricBufferLimit int `toml:"metric_buffer_limit"`
	// Precision rounds timestamps of gathered metrics; zero rounds them to the unit of the
	// gather interval, at most a second, as in Telegraf.
	Precision Precision `toml:"precision"`
	// Hostname overrides the host tag; empty means os.Hostname.
	Hostname string `toml:"hostname"`
	// OmitHostname leaves the host tag out.
	OmitHostname bool `toml:"omit_hostname"`
	// ShutdownTimeout bounds the final flush on shutdown.
	ShutdownTimeout morse.Duration `toml:"shutdown_timeout"`
	// Debug turns on debug logging.
	Debug bool `toml:"debug"`
	// Quiet logs errors only.
	Quiet bool `toml:"quiet"`
	// Logfile sends the log to a file instead of stderr; empty means stderr.
	Logfile string `toml:"logfile"`
	// LogSettings are the log format, its time zone and the rotation of Logfile.
	LogSettings
	// Unsupported are the [agent] keys that morse accepts and warns about once.
	Unsupported
	// BufferConfig is buffer_strategy, buffer_directory and the buffer's bounds, for every
	// output that does not set its own.
	BufferConfig
	// BufferMemoryLimit bounds the bytes that every output's memory buffer holds together;
	// past it the oldest metrics of the largest buffer go, counted as buffer_bytes. Zero takes
	// a quarter of the memory the process may use: its cgroup's limit, else the host's.
	BufferMemoryLimit morse.Size `toml:"buffer_memory_limit"`
	// AlwaysIncludeLocalTags and AlwaysIncludeGlobalTags are Telegraf's keys that let an
	// input's tags and the global tags pass its taginclude and tagexclude. morse adds both
	// after the input's filter, so they always pass it: true is what morse does either way.
	AlwaysIncludeLocalTags  bool `toml:"always_include_local_tags"`
	AlwaysIncludeGlobalTags bool `toml:"always_include_global_tags"`
	// SkipProcessorsAfterAggregators passes aggregators' summaries straight to the outputs
	// instead of through the processors again.
	SkipProcessorsAfterAggregators bool `toml:"skip_processors_after_aggregators"`
}

// DefaultAgentConfig returns the settings that apply when [agent] leaves a key out. They are
// Telegraf's defaults, so that existing configs behave the same.
func DefaultAgentConfig() AgentConfig {
	return AgentConfig{
		Interval:          morse.Duration(10 * time.Second),
		RoundInterval:     true,
		FlushInterval:     morse.Duration(10 * time.Second),
		MetricBatchSize:   1000,
		MetricBufferLimit: 10000,
		ShutdownTimeout:   morse.Duration(10 * time.Second),
		LogSettings:       LogSettings{Format: LogFormatText, RotationMaxArchives: 5},
		BufferConfig: BufferConfig{Strategy: BufferMemory, DiskSync: "1s", Drain: DrainOldestFirst,
			HighWater: defaultHighWater, LowWater: defaultLowWater},
	}
}

// Validate checks the rules between the agent's settings. The problems it returns carry the
// key relative to [agent] (such as "flush_jitter") and no file or line, which the loader adds.
func (a AgentConfig) Validate() Errors {
	var errs Errors
	bad := func(key, format string, args ...any) {
		errs = append(errs, Error{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, d := range []struct {
		key string
		v   morse.Duration
	}{
		{"interval", a.Interval}, {"collection_jitter", a.CollectionJitter}, {"collection_offset", a.CollectionOffset},
		{"flush_interval", a.FlushInterval}, {"flush_jitter", a.FlushJitter},
		{"shutdown_timeout", a.ShutdownTimeout},
	} {
		if d.v < 0 {
			bad(d.key, "must not be negative, got %s", d.v)
		}
	}
	if a.Interval == 0 {
		bad("interval", "must be greater than zero")
	}
	if a.FlushInterval == 0 {
		bad("flush_interval", "must be greater than zero")
	}
	if a.Interval > 0 && a.CollectionJitter >= a.Interval {
		bad("collection_jitter", "%s must be smaller than interval (%s)", a.CollectionJitter, a.Interval)
	}
	if a.FlushInterval > 0 && a.FlushJitter >= a.FlushInterval {
		bad("flush_jitter", "%s must be smaller than flush_interval (%s)", a.FlushJitter, a.FlushInterval)
	}
	for _, p := range a.BufferConfig.problems() {
		bad(p.Path, "%s", p.Msg)
	}
	for _, p := range a.LogSettings.problems() {
		bad(p.Path, "%s", p.Msg)
	}
	if a.BufferMemoryLimit < 0 {
		bad("buffer_memory_limit", "must not be negative, got %d", a.BufferMemoryLimit)
	}
	if a.MetricBatchSize < 1 {
		bad("metric_batch_size", "must be at least 1, got %d", a.MetricBatchSize)
	}
	switch {
	case a.MetricBufferLimit < 1:
		bad("metric_buffer_limit", "must be at least 1, got %d", a.MetricBufferLimit)
	case a.MetricBatchSize >= 1 && a.MetricBufferLimit < a.MetricBatchSize:
		bad("metric_buffer_limit", "%d must be at least metric_batch_size (%d)", a.MetricBufferLimit, a.MetricBatchSize)
	}
	return errs
}

// Precision is the unit that gathered timestamps are rounded to. Zero rounds to the unit of
// each input's gather interval, at most a second, as Telegraf does; outputs that send a
// precision to their sink then send nanoseconds.
type Precision time.Duration

var precisions = map[string]Precision{
	"": 0, "0s": 0, "0": 0,
	"1ns": Precision(time.Nanosecond), "ns": Precision(time.Nanosecond),
	"1us": Precision(time.Microsecond), "us": Precision(time.Microsecond),
	"1µs": Precision(time.Microsecond), "µs": Precision(time.Microsecond),
	"1ms": Precision(time.Millisecond), "ms": Precision(time.Millisecond),
	"1s": Precision(time.Second), "s": Precision(time.Second),
}

// UnmarshalText accepts the four units line protocol knows, long ("1ms") or short ("ms").
// Other durations are refused: InfluxDB could not be told such a precision.
func (p *Precision) UnmarshalText(b []byte) error {
	v, ok := precisions[strings.TrimSpace(string(b))]
	if !ok {
		return fmt.Errorf("invalid precision %q: use \"ns\", \"us\", \"ms\" or \"s\" (or \"\" for the interval's unit)", b)
	}
	*p = v
	return nil
}

// MarshalText writes the precision in a form UnmarshalText reads back.
func (p Precision) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// String formats the precision like a duration: "0s", "1ms".
func (p Precision) String() string { return time.Duration(p).String() }

// Duration is the rounding unit, never zero: nanoseconds when the precision is unset.
func (p Precision) Duration() time.Duration {
	if p <= 0 {
		return time.Nanosecond
	}
	return time.Duration(p)
}
