package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// The log formats of [agent] logformat, Telegraf's names.
const (
	LogFormatText       = "text"       // Telegraf's lines: time, E!/W!/I!/D!/T!, [plugin], message
	LogFormatLogfmt     = "logfmt"     // morse's own: one line of key=value pairs per record
	LogFormatStructured = "structured" // one JSON object per record
)

// LogSettings are Telegraf's [agent] keys for the log: its format, time zone and the
// rotation of logfile. They have Telegraf's meanings and defaults.
type LogSettings struct {
	// Format is "text" (also when empty: Telegraf's lines), "logfmt" (key=value pairs, a
	// morse addition) or "structured" (JSON).
	Format string `toml:"logformat"`
	// MessageKey replaces the key "msg" of structured records; other formats ignore it.
	MessageKey string `toml:"structured_log_message_key"`
	// Timezone is the zone of the logged times: a name such as "America/Chicago", "local"
	// for the machine's, or empty for UTC, as in Telegraf.
	Timezone string `toml:"log_with_timezone"`
	// RotationInterval rotates logfile when it is this old; zero never does.
	RotationInterval morse.Duration `toml:"logfile_rotation_interval"`
	// RotationMaxSize rotates logfile when it has grown to this size; zero never does.
	RotationMaxSize morse.Size `toml:"logfile_rotation_max_size"`
	// RotationMaxArchives is how many rotated files are kept, the oldest deleted first;
	// -1 keeps them all. 5 by default, as in Telegraf.
	RotationMaxArchives int `toml:"logfile_rotation_max_archives"`
	// Target is Telegraf's deprecated logtarget: "stderr" ignores logfile, "file" uses it.
	Target string `toml:"logtarget"`
}

// Location is the time zone of logged times, as log_with_timezone names it.
func (l LogSettings) Location() (*time.Location, error) {
	name := l.Timezone
	if strings.EqualFold(name, "local") {
		name = "Local"
	}
	return time.LoadLocation(name)
}

// File is the file to log to, empty for stderr: logfile, unless the deprecated logtarget
// says "stderr".
func (l LogSettings) File(logfile string) string {
	if l.Target == "stderr" {
		return ""
	}
	return logfile
}

func (l LogSettings) problems() []problem {
	var probs []problem
	switch l.Format {
	case "", LogFormatText, LogFormatLogfmt, LogFormatStructured:
	case "eventlog":
		probs = append(probs, problem{"logformat", `"eventlog" is the Windows event log, and morse runs on Linux: use "text", "logfmt" or "structured"`})
	default:
		probs = append(probs, problem{"logformat", fmt.Sprintf("%q: must be \"text\", \"logfmt\" or \"structured\"", l.Format)})
	}
	switch l.Target {
	case "", "stderr", "file":
	case "eventlog":
		probs = append(probs, problem{"logtarget", `"eventlog" is the Windows event log, and morse runs on Linux`})
	default:
		probs = append(probs, problem{"logtarget", fmt.Sprintf("%q: must be \"stderr\" or \"file\" (and is deprecated: set logfile alone)", l.Target)})
	}
	if _, err := l.Location(); err != nil {
		probs = append(probs, problem{"log_with_timezone", err.Error()})
	}
	if l.RotationInterval < 0 {
		probs = append(probs, problem{"logfile_rotation_interval", "must not be negative, got " + l.RotationInterval.String()})
	}
	if l.RotationMaxSize < 0 {
		probs = append(probs, problem{"logfile_rotation_max_size", fmt.Sprintf("must not be negative, got %d", l.RotationMaxSize)})
	}
	if l.RotationMaxArchives < -1 {
		probs = append(probs, problem{"logfile_rotation_max_archives", fmt.Sprintf("must be -1 (keep all) or more, got %d", l.RotationMaxArchives)})
	}
	return probs
}

// Unsupported are [agent] keys of Telegraf 1.39.3 that morse accepts, so that a telegraf.conf
// loads, but that have no effect here. Each one that is set is named, with the reason, in one
// warning at start (Warnings).
type Unsupported struct {
	// Statefile is where Telegraf keeps the state of its stateful plugins across restarts.
	Statefile string `toml:"statefile"`
	// SnmpTranslator picks Telegraf's SNMP MIB translator.
	SnmpTranslator string `toml:"snmp_translator"`
	// ConfigURLRetryAttempts is how often Telegraf retries fetching a config from a URL.
	ConfigURLRetryAttempts int `toml:"config_url_retry_attempts"`
}

// Warnings names each accepted key that is set but has no effect, and why, plus Telegraf's
// own deprecation warning for logtarget. The agent logs each once when it starts.
func (a AgentConfig) Warnings() []string {
	var w []string
	u := a.Unsupported
	if u.Statefile != "" {
		w = append(w, "[agent] statefile has no effect in morse: no morse plugin keeps state across restarts "+
			"(inputs.tail starts as initial_read_offset says with no saved offset, processors.dedup with an empty cache)")
	}
	if u.SnmpTranslator != "" {
		w = append(w, "[agent] snmp_translator has no effect in morse: morse's SNMP plugins always translate with gosmi")
	}
	if u.ConfigURLRetryAttempts != 0 {
		w = append(w, "[agent] config_url_retry_attempts has no effect in morse: configs are read from files only")
	}
	switch a.Target {
	case "stderr":
		w = append(w, `[agent] logtarget is deprecated (as in Telegraf, which removes it in 1.40): leave logfile empty to log to stderr, and remove logtarget`)
	case "file":
		w = append(w, `[agent] logtarget is deprecated (as in Telegraf, which removes it in 1.40): set logfile alone, and remove logtarget`)
	}
	return w
}
