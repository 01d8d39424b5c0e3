package sysinputs

import (
	"context"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	_ "github.com/morse-agent/morse/plugins/inputs/cpu"
	_ "github.com/morse-agent/morse/plugins/inputs/disk"
	_ "github.com/morse-agent/morse/plugins/inputs/diskio"
	_ "github.com/morse-agent/morse/plugins/inputs/mem"
	_ "github.com/morse-agent/morse/plugins/inputs/net"
	_ "github.com/morse-agent/morse/plugins/inputs/system"
)

// count is an accumulator that only counts, so that the benchmark measures the inputs and
// not a recording accumulator's growing slices.
type count struct{ metrics, errors int }

func (c *count) AddMetric(morse.Metric) { c.metrics++ }

func (c *count) AddFields(string, map[string]any, map[string]string, ...time.Time) { c.metrics++ }

func (c *count) AddError(error) { c.errors++ }

// BenchmarkGatherSystemInputs gathers once per iteration from each input, built as the
// agent builds it: New with Telegraf's defaults, then Validate and Init where the input
// has them.
func BenchmarkGatherSystemInputs(b *testing.B) {
	for _, name := range []string{"cpu", "mem", "disk", "diskio", "net", "system"} {
		b.Run(name, func(b *testing.B) {
			info, ok := morse.DefaultRegistry().Input(name)
			if !ok {
				b.Fatalf("input %q is not registered", name)
			}
			in := info.New()
			if v, ok := in.(morse.Validator); ok {
				if err := v.Validate(); err != nil {
					b.Fatal(err)
				}
			}
			if i, ok := in.(morse.Initializer); ok {
				if err := i.Init(); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			acc := &count{}
			b.ReportAllocs()
			for b.Loop() {
				if err := in.Gather(ctx, acc); err != nil {
					b.Fatal(err)
				}
			}
			if acc.metrics == 0 {
				b.Fatalf("%s gathered no metrics", name)
			}
			b.ReportMetric(float64(acc.metrics)/float64(b.N), "metrics/op")
		})
	}
}
