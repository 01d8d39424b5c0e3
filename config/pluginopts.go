package config

import (
	"fmt"
	"log/slog"
	"strings"
)

// LevelTrace is Telegraf's "trace" log level, below debug. slog has no name for it.
const LevelTrace = slog.LevelDebug - 4

// LogLevel is a plugin's log_level, Telegraf's per-plugin log level: "error", "warn",
// "info", "debug" or "trace", in lower or upper case. Empty inherits the agent's level.
// It may be more verbose than the agent's: log_level = "debug" on one input shows its debug
// messages and no other plugin's.
type LogLevel string

// UnmarshalText checks the level's name as Telegraf's LogLevelFromString reads it.
func (l *LogLevel) UnmarshalText(b []byte) error {
	s := string(b)
	if _, ok := logLevels[s]; !ok && s != "" {
		return fmt.Errorf("%q: must be \"error\", \"warn\", \"info\", \"debug\" or \"trace\"", s)
	}
	*l = LogLevel(s)
	return nil
}

// Level returns the slog level, and false when l is empty.
func (l LogLevel) Level() (slog.Level, bool) {
	v, ok := logLevels[string(l)]
	return v, ok
}

var logLevels = map[string]slog.Level{
	"error": slog.LevelError, "ERROR": slog.LevelError,
	"warn": slog.LevelWarn, "WARN": slog.LevelWarn,
	"info": slog.LevelInfo, "INFO": slog.LevelInfo,
	"debug": slog.LevelDebug, "DEBUG": slog.LevelDebug,
	"trace": LevelTrace, "TRACE": LevelTrace,
}

// StartupErrorBehavior is startup_error_behavior: what the agent does when a plugin fails
// to start.
type StartupErrorBehavior string

// The startup error behaviours, as Telegraf names them.
const (
	// StartupError (the default) refuses to start the agent.
	StartupError StartupErrorBehavior = "error"
	// StartupRetry starts the agent without the plugin and tries to start it again before
	// each of its gathers.
	StartupRetry StartupErrorBehavior = "retry"
	// StartupIgnore leaves the plugin out and runs the others.
	StartupIgnore StartupErrorBehavior = "ignore"
	// StartupProbe is StartupIgnore in morse, whose plugins have no probe of their own.
	StartupProbe StartupErrorBehavior = "probe"
)

// UnmarshalText checks the behaviour's name.
func (s *StartupErrorBehavior) UnmarshalText(b []byte) error {
	switch v := StartupErrorBehavior(b); v {
	case "", StartupError, StartupRetry, StartupIgnore, StartupProbe:
		*s = v
		return nil
	}
	return fmt.Errorf("%q: must be \"error\", \"retry\", \"ignore\" or \"probe\"", string(b))
}

// TimeSource is an input's time_source: which time its gathered metrics carry.
type TimeSource string

// The time sources, as Telegraf names them.
const (
	// TimeMetric (the default) keeps the time the plugin gave each metric.
	TimeMetric TimeSource = "metric"
	// TimeCollectionStart gives every metric of a gather the time the gather started.
	TimeCollectionStart TimeSource = "collection_start"
	// TimeCollectionEnd gives every metric of a gather the time the gather ended.
	TimeCollectionEnd TimeSource = "collection_end"
)

// UnmarshalText checks the source's name.
func (t *TimeSource) UnmarshalText(b []byte) error {
	switch v := TimeSource(b); v {
	case "", TimeMetric, TimeCollectionStart, TimeCollectionEnd:
		*t = v
		return nil
	}
	return fmt.Errorf("%q: must be %s", string(b), strings.Join([]string{
		`"metric"`, `"collection_start"`, `"collection_end"`}, ", "))
}

// Rename applies name_override, then name_prefix and name_suffix, to a measurement name, in
// Telegraf's order. It returns name itself when none is set.
type Rename struct {
	// NameOverride replaces the measurement name.
	NameOverride string `toml:"name_override"`
	// NamePrefix is put before the measurement name.
	NamePrefix string `toml:"name_prefix"`
	// NameSuffix is put after the measurement name.
	NameSuffix string `toml:"name_suffix"`
}

// Set reports whether any of the three options is set.
func (r Rename) Set() bool { return r.NameOverride != "" || r.NamePrefix != "" || r.NameSuffix != "" }

// Apply returns the renamed measurement name.
func (r Rename) Apply(name string) string {
	if r.NameOverride != "" {
		name = r.NameOverride
	}
	return r.NamePrefix + name + r.NameSuffix
}
