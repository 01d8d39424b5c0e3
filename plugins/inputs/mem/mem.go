// Package mem is the inputs.mem plugin. It reports the system's memory under Telegraf's
// measurement and field names and types: the same fields for the same operating system, byte
// counts as unsigned integers (gopsutil's uint64, which Telegraf adds as they are) and the two
// percentages as floats, so that existing dashboards and series keep working.
package mem

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/mem"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about memory usage"

//go:embed sample.conf
var sampleConfig string

// VirtualMemoryFunc reads the system's memory statistics. gopsutil's
// mem.VirtualMemoryWithContext is the default; tests inject fixed values.
type VirtualMemoryFunc func(ctx context.Context) (*mem.VirtualMemoryStat, error)

// Mem is the inputs.mem plugin and its configuration. Build it with New.
type Mem struct {
	// CollectExtended adds the fields that Telegraf's collect_extended adds on Linux.
	CollectExtended bool `toml:"collect_extended"`

	// VirtualMemory replaces the source of memory statistics; nil means the system's.
	VirtualMemory VirtualMemoryFunc `toml:"-"`

	// goos selects the platform's field set, as Telegraf does; tests change it.
	goos string
	// extended reads the collect_extended fields; tests replace it.
	extended func(ctx context.Context) ([]morse.Field, error)
	log      *slog.Logger
}

// The engine finds Validate by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Mem)(nil)
	_ morse.Initializer  = (*Mem)(nil)
	_ morse.LoggerSetter = (*Mem)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Mem {
	return &Mem{goos: runtime.GOOS, extended: readExtended}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "mem",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (m *Mem) SetLogger(l *slog.Logger) { m.log = l }

// Init turns collect_extended off where it cannot work, with one warning, as Telegraf does:
// a config written for another platform still starts.
func (m *Mem) Init() error {
	if m.CollectExtended && !extendedSupported {
		logger(m.log).Warn("collect_extended is not supported on this platform, ignoring", "os", runtime.GOOS)
		m.CollectExtended = false
	}
	return nil
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// Gather reports one mem metric.
func (m *Mem) Gather(ctx context.Context, acc morse.Accumulator) error {
	read := m.VirtualMemory
	if read == nil {
		read = mem.VirtualMemoryWithContext
	}
	vm, err := read(ctx)
	if err != nil {
		return fmt.Errorf("reading virtual memory: %w", err)
	}
	fields := platformFields(vm, m.platform())
	if m.CollectExtended {
		ext := m.extended
		if ext == nil {
			ext = readExtended
		}
		// Without the extended fields the basic ones are still worth reporting, as in
		// Telegraf.
		more, err := ext(ctx)
		if err != nil {
			acc.AddError(fmt.Errorf("reading extended memory statistics: %w", err))
		}
		fields = append(fields, more...)
	}
	// Alphabetical order, as Telegraf writes them, makes lines easy to compare by eye.
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	acc.AddMetric(morse.NewMetric("mem", nil, fields, time.Now()))
	return nil
}

func (m *Mem) platform() string {
	if m.goos == "" {
		return runtime.GOOS
	}
	return m.goos
}

// platformFields lists the fields Telegraf reports on each platform.
func platformFields(vm *mem.VirtualMemoryStat, goos string) []morse.Field {
	fs := make([]morse.Field, 0, 40)
	switch goos {
	case "linux":
		fs = linuxFields(fs, vm)
	case "darwin":
		fs = append(fs, num("active", vm.Active), num("free", vm.Free), num("inactive", vm.Inactive), num("wired", vm.Wired))
	case "openbsd":
		// Telegraf reports OpenBSD's buffer cache as "cached".
		fs = append(fs, num("active", vm.Active), num("cached", vm.Buffers), num("free", vm.Free),
			num("inactive", vm.Inactive), num("wired", vm.Wired))
	case "freebsd":
		fs = append(fs, num("active", vm.Active), num("buffered", vm.Buffers), num("cached", vm.Cached),
			num("free", vm.Free), num("inactive", vm.Inactive), num("laundry", vm.Laundry), num("wired", vm.Wired))
	}
	fs = append(fs, num("available", vm.Available))
	// A zero total would make the percentages NaN, which line protocol cannot carry.
	if vm.Total > 0 {
		fs = append(fs,
			morse.Field{Key: "available_percent", Value: morse.Float(100 * float64(vm.Available) / float64(vm.Total))},
			morse.Field{Key: "used_percent", Value: morse.Float(100 * float64(vm.Used) / float64(vm.Total))},
		)
	}
	return append(fs, num("total", vm.Total), num("used", vm.Used))
}

func linuxFields(fs []morse.Field, vm *mem.VirtualMemoryStat) []morse.Field {
	return append(fs,
		num("active", vm.Active),
		num("buffered", vm.Buffers),
		num("cached", vm.Cached),
		num("commit_limit", vm.CommitLimit),
		num("committed_as", vm.CommittedAS),
		num("dirty", vm.Dirty),
		num("free", vm.Free),
		num("high_free", vm.HighFree),
		num("high_total", vm.HighTotal),
		num("huge_page_size", vm.HugePageSize),
		num("huge_pages_free", vm.HugePagesFree),
		num("huge_pages_total", vm.HugePagesTotal),
		num("inactive", vm.Inactive),
		num("low_free", vm.LowFree),
		num("low_total", vm.LowTotal),
		num("mapped", vm.Mapped),
		num("page_tables", vm.PageTables),
		num("shared", vm.Shared),
		num("slab", vm.Slab),
		num("sreclaimable", vm.Sreclaimable),
		num("sunreclaim", vm.Sunreclaim),
		num("swap_cached", vm.SwapCached),
		num("swap_free", vm.SwapFree),
		num("swap_total", vm.SwapTotal),
		num("vmalloc_chunk", vm.VmallocChunk),
		num("vmalloc_total", vm.VmallocTotal),
		num("vmalloc_used", vm.VmallocUsed),
		num("write_back", vm.WriteBack),
		num("write_back_tmp", vm.WriteBackTmp),
	)
}

// num makes an unsigned field, the type Telegraf emits for gopsutil's counters. Outputs
// without uint support write it as a signed integer, clamped as Telegraf clamps it.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Uint(v)}
}
