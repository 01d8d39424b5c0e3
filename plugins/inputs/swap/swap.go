// Package swap is the inputs.swap plugin. It reports the system's swap space and the bytes
// swapped in and out since boot under Telegraf's measurement and field names.
//
// Telegraf emits the gauges (total, used, free, used_percent) and the two counters (in, out)
// as two metrics of the same series and timestamp. A time-series database stores them as one
// point either way, so morse emits one metric that carries all six fields; that halves what
// the plugin puts into every output buffer. The counters are reported raw, as Telegraf does:
// rates are left to queries, which also handle a reset at reboot.
package swap

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"time"

	"github.com/shirou/gopsutil/v4/mem"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about swap memory usage"

//go:embed sample.conf
var sampleConfig string

// SwapMemoryFunc reads the system's swap statistics. gopsutil's mem.SwapMemoryWithContext is
// the default; tests inject fixed values.
type SwapMemoryFunc func(ctx context.Context) (*mem.SwapMemoryStat, error)

// Swap is the inputs.swap plugin. It has no options; build it with New.
type Swap struct {
	// SwapMemory replaces the source of swap statistics; nil means the system's.
	SwapMemory SwapMemoryFunc `toml:"-"`
}

// The engine finds the interfaces by type assertion; a typo would go unnoticed.
var _ morse.Input = (*Swap)(nil)

// New returns the plugin, which has nothing to configure.
func New() *Swap { return &Swap{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "swap",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Gather reports one swap metric.
func (s *Swap) Gather(ctx context.Context, acc morse.Accumulator) error {
	read := s.SwapMemory
	if read == nil {
		read = mem.SwapMemoryWithContext
	}
	sw, err := read(ctx)
	if err != nil {
		return fmt.Errorf("error getting swap memory info: %w", err)
	}
	// gopsutil reports 0 rather than NaN for used_percent when there is no swap at all,
	// exactly what Telegraf writes; a machine without swap keeps a complete series.
	used := sw.UsedPercent
	if math.IsNaN(used) || math.IsInf(used, 0) {
		used = 0
	}
	// Alphabetical order, as Telegraf writes fields, makes lines easy to compare by eye.
	fields := []morse.Field{
		num("free", sw.Free),
		num("in", sw.Sin),
		num("out", sw.Sout),
		num("total", sw.Total),
		num("used", sw.Used),
		{Key: "used_percent", Value: morse.Float(used)},
	}
	acc.AddMetric(morse.NewMetric("swap", nil, fields, time.Now()))
	return nil
}

// num makes an unsigned field, the type Telegraf emits for gopsutil's uint64 values. Outputs
// without uint support write it as a signed integer, clamped as Telegraf clamps it.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Uint(v)}
}
