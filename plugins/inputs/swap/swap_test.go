package swap

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shirou/gopsutil/v4/mem"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func fixed(s *mem.SwapMemoryStat, err error) SwapMemoryFunc {
	return func(context.Context) (*mem.SwapMemoryStat, error) { return s, err }
}

func TestRegisteredWithSample(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("swap")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.swap]]\n"),
		"sample.conf starts with the description and the header, as Telegraf's does")
	_, ok = info.New().(*Swap)
	require.True(t, ok)
}

func TestFields(t *testing.T) {
	tests := []struct {
		name string
		stat *mem.SwapMemoryStat
		want map[string]any
	}{
		{
			name: "every field wired to its own statistic",
			stat: &mem.SwapMemoryStat{Total: 1000, Used: 250, Free: 750, UsedPercent: 25, Sin: 4096, Sout: 8192, PgIn: 1, PgOut: 2},
			want: map[string]any{"total": uint64(1000), "used": uint64(250), "free": uint64(750),
				"used_percent": 25.0, "in": uint64(4096), "out": uint64(8192)},
		},
		{
			name: "no swap at all still reports every field",
			stat: &mem.SwapMemoryStat{},
			want: map[string]any{"total": uint64(0), "used": uint64(0), "free": uint64(0),
				"used_percent": 0.0, "in": uint64(0), "out": uint64(0)},
		},
		{
			name: "a NaN percentage is written as 0, never as NaN, and huge counters stay unsigned",
			stat: &mem.SwapMemoryStat{UsedPercent: math.NaN(), Sin: math.MaxUint64},
			want: map[string]any{"total": uint64(0), "used": uint64(0), "free": uint64(0),
				"used_percent": 0.0, "in": uint64(math.MaxUint64), "out": uint64(0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Swap{SwapMemory: fixed(tt.stat, nil)}
			acc := &testutil.Accumulator{}
			require.NoError(t, s.Gather(context.Background(), acc))
			ms := acc.Metrics()
			require.Len(t, ms, 1, "gauges and counters in one metric")
			require.Equal(t, "swap", ms[0].Name())
			require.Empty(t, ms[0].Tags())
			require.Equal(t, tt.want, testutil.FieldsOf(ms[0]))
		})
	}
}

func TestGatherFailsWhenSwapCannotBeRead(t *testing.T) {
	s := &Swap{SwapMemory: fixed(nil, errors.New("no /proc/vmstat"))}
	acc := &testutil.Accumulator{}
	require.ErrorContains(t, s.Gather(context.Background(), acc), "error getting swap memory info: no /proc/vmstat")
	require.Empty(t, acc.Metrics())
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/swap.golden"
	require.Empty(t, testutil.LoadGolden(t, path).Config, "swap has no options")
	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	require.Len(t, ms, 1)
	// The check is not vacuous: a wrong type is caught.
	require.Equal(t, []string{"swap: field total: type integer, golden says unsigned"},
		testutil.LoadGolden(t, path).Check([]morse.Metric{ms[0].WithField("total", morse.Int(1))}))

	f := testutil.FieldsOf(ms[0])
	require.Equal(t, f["total"], f["used"].(uint64)+f["free"].(uint64), "used + free = total")
	require.InDelta(t, 50.0, f["used_percent"], 50.0)
}
