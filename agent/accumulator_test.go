package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/filter"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// mixedInput adds the same metrics on every gather, one by one or as one batch: line
// metrics, one of which already has a tag that the agent adds, and expanded metrics.
type mixedInput struct{ batch bool }

func mixedMetrics() []morse.Metric {
	return []morse.Metric{
		morse.NewLineMetric(morse.LineText{Text: "m,t=a v=1i,u=2u", Uints: true}, lineTime),
		morse.NewMetric("cpu", []morse.Tag{{Key: "cpu", Value: "0"}}, []morse.Field{{Key: "idle", Value: morse.Float(99.5)}}, lineTime),
		morse.NewLineMetric(morse.LineText{Text: "skip v=2i"}, lineTime),
		morse.NewLineMetric(morse.LineText{Text: "m,dc=mine v=3i"}, lineTime),
		morse.NewMetric("mem", nil, []morse.Field{{Key: "free", Value: morse.Uint(7)}}, time.Time{}),
	}
}

func (in *mixedInput) Gather(_ context.Context, acc morse.Accumulator) error {
	ms := mixedMetrics()
	if in.batch {
		acc.(morse.BatchAccumulator).AddMetrics(ms)
		return nil
	}
	for _, m := range ms {
		acc.AddMetric(m)
	}
	return nil
}

// TestAddMetricsMatchesAddMetric: every output gets from a batch exactly what it gets from
// the same metrics added one by one, in order, under filters, added tags and expansion,
// and the agent counts the same.
func TestAddMetricsMatchesAddMetric(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, cfg *config.Config)
	}{
		{"plain", nil},
		{"global tags", func(_ *testing.T, cfg *config.Config) { cfg.GlobalTags = map[string]string{"dc": "eu"} }},
		{"input drops a name", func(t *testing.T, cfg *config.Config) {
			cfg.Inputs[0].Filter = mustFilter(t, filter.Config{NameDrop: []string{"skip"}})
		}},
		{"output selects names", func(t *testing.T, cfg *config.Config) {
			cfg.Outputs[0].Filter = mustFilter(t, filter.Config{NamePass: []string{"m", "mem"}})
		}},
		{"output selects tags", func(t *testing.T, cfg *config.Config) {
			cfg.Outputs[0].Filter = mustFilter(t, filter.Config{TagPass: map[string][]string{"t": {"a"}}})
		}},
		{"name prefix", func(_ *testing.T, cfg *config.Config) { cfg.Inputs[0].Common.NamePrefix = "p_" }},
	}
	for _, tc := range cases {
		// In a bubble the clock stands still, so the metric without a time gets the same
		// one in both runs.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				want := runMixed(t, false, tc.edit)
				require.NotEmpty(t, want.plain)
				got := runMixed(t, true, tc.edit)
				require.Equal(t, want.lines, got.lines)
				require.Equal(t, want.plain, got.plain)
				require.Equal(t, want.written, got.written)
				require.Equal(t, want.filtered, got.filtered)
				require.Equal(t, want.gathered, got.gathered)
			})
		})
	}
	got := runMixed(t, true, nil)
	_, ok := got.lines[0].Line()
	require.True(t, ok, "a line metric reaches a line output as text")
	require.Len(t, got.lines, 5)
}

// mixedRun is what one gather of mixedInput left in the outputs and counters.
type mixedRun struct {
	lines, plain      []morse.Metric
	written, filtered []int64
	gathered          int64
}

func runMixed(t *testing.T, batch bool, edit func(*testing.T, *config.Config)) mixedRun {
	var r mixedRun
	var a *Agent
	r.lines, r.plain, a = gatherIntoTwoOutputs(t, &mixedInput{batch: batch}, func(cfg *config.Config) {
		if edit != nil {
			edit(t, cfg)
		}
	})
	for _, o := range a.Outputs() {
		r.written = append(r.written, o.Stats.Written)
		r.filtered = append(r.filtered, o.Stats.Filtered)
	}
	r.gathered = a.gathered.Get()
	return r
}

// loopInput adds n line metrics in one gather, one by one or in batches of 256.
type loopInput struct {
	n     int
	batch bool
}

func (in *loopInput) Gather(_ context.Context, acc morse.Accumulator) error {
	m := morse.NewLineMetric(morse.LineText{Text: "disk,device=sda,host=web-01 free=1i,used=2i"}, lineTime)
	if !in.batch {
		for range in.n {
			acc.AddMetric(m)
		}
		return nil
	}
	ba, ms := acc.(morse.BatchAccumulator), make([]morse.Metric, 256)
	for left := in.n; left > 0; left -= len(ms) {
		ms = ms[:min(left, cap(ms))]
		for i := range ms {
			ms[i] = m
		}
		ba.AddMetrics(ms)
	}
	return nil
}

// discardLines is an output that takes line metrics as they are and keeps none.
type discardLines struct{ testutil.DiscardOutput }

func (*discardLines) WritesLines() bool { return true }

// BenchmarkAccumulatorAdd measures carrying one line metric from an input into the buffer of
// an output that writes lines, one by one or in batches, while the output drains full
// batches as they come.
func BenchmarkAccumulatorAdd(b *testing.B) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "one_by_one", true: "batch_256"}[batch]
		b.Run(name, func(b *testing.B) {
			cfg := config.DefaultConfig()
			cfg.Agent.OmitHostname = true
			cfg.AddInput("loop", &loopInput{n: b.N, batch: batch})
			out := &discardLines{}
			cfg.AddOutput("lines", out)
			a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			require.NoError(b, a.Once(context.Background()))
			b.StopTimer()
			require.Equal(b, int64(b.N), a.gathered.Get())
			b.ReportMetric(float64(out.Written())/float64(b.N), "written/op")
		})
	}
}
