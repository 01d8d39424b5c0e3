package config

import (
	"fmt"
	"time"

	"github.com/morse-agent/morse"
)

// BufferConfig chooses where an output's buffer lives and bounds it, with Telegraf's keys
// (buffer_strategy, buffer_directory) and morse's own. [agent] sets it for every output,
// and each output may override any key; a key left unset inherits [agent]'s.
type BufferConfig struct {
	// Strategy is "memory" (the default) or "disk": a durable buffer under Directory that
	// survives restarts and crashes.
	Strategy string `toml:"buffer_strategy"`
	// Directory holds one sub-directory per output for the disk strategy.
	Directory string `toml:"buffer_directory"`
	// MaxBytes bounds the bytes the buffer holds; past it the oldest go, counted as
	// buffer_bytes. Zero: for the memory buffer 3 KiB a metric of metric_buffer_limit, at
	// least 32 MiB (batch.DefaultMaxBytes), and no bound beyond metric_buffer_limit for the
	// disk buffer.
	MaxBytes morse.Size `toml:"buffer_max_bytes"`
	// MaxAge drops metrics that waited longer than this, counted as too_old. Zero: none.
	MaxAge morse.Duration `toml:"buffer_max_age"`
	// DiskSync is how often the disk buffer is fsynced: a duration ("1s", the default), or
	// "never" to leave it to the kernel. A crash of the process loses nothing either way;
	// only a crash of the machine can lose what was not yet synced. Telegraf's boolean is
	// read too: true is the default interval, false is "never".
	DiskSync DiskSyncSetting `toml:"buffer_disk_sync"`
	// Drain is "oldest_first" (the default) or "newest_first": after an outage, write the
	// newest metrics first, so that dashboards show the present at once, and backfill.
	Drain string `toml:"buffer_drain"`
	// HighWater and LowWater are backpressure's water marks, as fractions of
	// metric_buffer_limit (0.8 and 0.6). While an output keeps up with its sink and its
	// buffer holds more than HighWater of its limit, the listeners that feed it and can push
	// back (TCP, unix, HTTP) stop taking more until it is down to LowWater. An output whose
	// writes fail never holds them back.
	HighWater float64 `toml:"buffer_high_water"`
	LowWater  float64 `toml:"buffer_low_water"`
}

// The buffer strategies and drain orders.
const (
	BufferMemory      = "memory"
	BufferDisk        = "disk"
	DrainOldestFirst  = "oldest_first"
	DrainNewestFirst  = "newest_first"
	DiskSyncNever     = "never"
	defaultDiskSyncAt = time.Second
)

// Over returns b with every key it leaves unset taken from parent.
func (b BufferConfig) Over(parent BufferConfig) BufferConfig {
	if b.Strategy == "" {
		b.Strategy = parent.Strategy
	}
	if b.Directory == "" {
		b.Directory = parent.Directory
	}
	if b.MaxBytes == 0 {
		b.MaxBytes = parent.MaxBytes
	}
	if b.MaxAge == 0 {
		b.MaxAge = parent.MaxAge
	}
	if b.DiskSync == "" {
		b.DiskSync = parent.DiskSync
	}
	if b.Drain == "" {
		b.Drain = parent.Drain
	}
	if b.HighWater == 0 {
		b.HighWater = parent.HighWater
	}
	if b.LowWater == 0 {
		b.LowWater = parent.LowWater
	}
	return b
}

// Default water marks of backpressure, as fractions of metric_buffer_limit.
const (
	defaultHighWater = 0.8
	defaultLowWater  = 0.6
)

// WaterMarks returns the water marks with their defaults applied. A high-water mark set at
// or below the default low one brings the low one down to three quarters of it.
func (b BufferConfig) WaterMarks() (high, low float64) {
	high, low = b.HighWater, b.LowWater
	if high == 0 {
		high = defaultHighWater
	}
	if low == 0 {
		low = min(defaultLowWater, 0.75*high)
	}
	return high, low
}

// DiskSyncSetting is buffer_disk_sync: an interval, "never", or Telegraf's boolean.
type DiskSyncSetting string

// UnmarshalTOML reads a string as it is, and Telegraf's true and false as the default
// interval and "never". Telegraf's true fsyncs every write; morse's disk buffer fsyncs at
// an interval, and a crash of the process loses nothing either way.
func (s *DiskSyncSetting) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*s = DiskSyncSetting(v)
	case bool:
		*s = DiskSyncSetting(defaultDiskSyncAt.String())
		if !v {
			*s = DiskSyncNever
		}
	default:
		return fmt.Errorf("expected an interval, \"never\", true or false, got %T", v)
	}
	return nil
}

// SyncInterval reads DiskSync: the interval, or zero for "never".
func (b BufferConfig) SyncInterval() (time.Duration, error) {
	switch b.DiskSync {
	case "":
		return defaultDiskSyncAt, nil
	case DiskSyncNever:
		return 0, nil
	}
	var d morse.Duration
	if err := d.UnmarshalText([]byte(b.DiskSync)); err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: write an interval such as \"1s\", or \"never\"", b.DiskSync)
	}
	return time.Duration(d), nil
}

// problems checks the keys, as an effective configuration (after Over).
func (b BufferConfig) problems() []problem {
	var probs []problem
	switch b.Strategy {
	case "", BufferMemory:
	case BufferDisk:
		if b.Directory == "" {
			probs = append(probs, problem{"buffer_directory", `is required with buffer_strategy = "disk"`})
		}
	default:
		probs = append(probs, problem{"buffer_strategy", fmt.Sprintf("%q: must be \"memory\" or \"disk\"", b.Strategy)})
	}
	switch b.Drain {
	case "", DrainOldestFirst, DrainNewestFirst:
	default:
		probs = append(probs, problem{"buffer_drain", fmt.Sprintf("%q: must be \"oldest_first\" or \"newest_first\"", b.Drain)})
	}
	if _, err := b.SyncInterval(); err != nil {
		probs = append(probs, problem{"buffer_disk_sync", err.Error()})
	}
	if high, low := b.WaterMarks(); high < 0 || high > 1 || low < 0 || low >= high {
		probs = append(probs, problem{"buffer_high_water", fmt.Sprintf(
			"%g and buffer_low_water %g: need 0 <= buffer_low_water < buffer_high_water <= 1", high, low)})
	}
	if b.MaxBytes < 0 {
		probs = append(probs, problem{"buffer_max_bytes", "must not be negative"})
	}
	if b.MaxAge < 0 {
		probs = append(probs, problem{"buffer_max_age", "must not be negative, got " + b.MaxAge.String()})
	}
	return probs
}
