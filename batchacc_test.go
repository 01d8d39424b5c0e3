package morse

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// mixedInput adds the same metrics on every gather, one by one or as one batch: line
// metrics, one of which already has a tag that the agent adds, and expanded metrics.
type mixedInput struct{ batch bool }

func mixedMetrics() []Metric {
	return []Metric{
		NewLineMetric(LineText{Text: "m,t=a v=1i,u=2u", Uints: true}, lineTime),
		NewMetric("cpu", []Tag{{"cpu", "0"}}, []Field{{"idle", Float(99.5)}}, lineTime),
		NewLineMetric(LineText{Text: "skip v=2i"}, lineTime),
		NewLineMetric(LineText{Text: "m,dc=mine v=3i"}, lineTime),
		NewMetric("mem", nil, []Field{{"free", Uint(7)}}, time.Time{}),
	}
}

func (in *mixedInput) Gather(_ context.Context, acc Accumulator) error {
	ms := mixedMetrics()
	if in.batch {
		acc.(BatchAccumulator).AddMetrics(ms)
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
		edit func(t *testing.T, cfg *Config)
	}{
		{"plain", nil},
		{"global tags", func(_ *testing.T, cfg *Config) { cfg.GlobalTags = map[string]string{"dc": "eu"} }},
		{"input drops a name", func(t *testing.T, cfg *Config) {
			cfg.Inputs[0].Filter = mustFilter(t, FilterConfig{NameDrop: []string{"skip"}})
		}},
		{"output selects names", func(t *testing.T, cfg *Config) {
			cfg.Outputs[0].Filter = mustFilter(t, FilterConfig{NamePass: []string{"m", "mem"}})
		}},
		{"output selects tags", func(t *testing.T, cfg *Config) {
			cfg.Outputs[0].Filter = mustFilter(t, FilterConfig{TagPass: map[string][]string{"t": {"a"}}})
		}},
		{"name prefix", func(_ *testing.T, cfg *Config) { cfg.Inputs[0].Common.NamePrefix = "p_" }},
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
	lines, plain      []Metric
	written, filtered []int64
	gathered          int64
}

func runMixed(t *testing.T, batch bool, edit func(*testing.T, *Config)) mixedRun {
	var r mixedRun
	var a *Agent
	r.lines, r.plain, a = gatherIntoTwoOutputs(t, &mixedInput{batch: batch}, func(cfg *Config) {
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

// countingAcc records what reaches it, and how.
type countingAcc struct {
	discardAcc
	single  []Metric
	batches [][]Metric
}

func (a *countingAcc) AddMetric(m Metric) { a.single = append(a.single, m) }
func (a *countingAcc) AddMetrics(ms []Metric) {
	a.batches = append(a.batches, append([]Metric(nil), ms...))
}

// discardAcc is an Accumulator that takes nothing in batches.
type discardAcc struct{ n int }

func (a *discardAcc) AddMetric(Metric)                                                  { a.n++ }
func (a *discardAcc) AddFields(string, map[string]any, map[string]string, ...time.Time) {}
func (a *discardAcc) AddError(error)                                                    {}

func TestMetricBatchHandsOverWhenFullAndOnFlush(t *testing.T) {
	acc := &countingAcc{}
	b := NewMetricBatch(acc, 2)
	ms := mixedMetrics()
	for _, m := range ms[:3] {
		b.Add(m)
	}
	require.Equal(t, [][]Metric{ms[:2]}, acc.batches, "a full batch goes at once")
	b.Flush()
	b.Flush()
	require.Equal(t, [][]Metric{ms[:2], ms[2:3]}, acc.batches, "an empty batch is not handed over")
	require.Empty(t, acc.single)
	require.Equal(t, make([]Metric, 2), b.ms[:2], "handed-over slots pin nothing")

	plain := &discardAcc{}
	pb := NewMetricBatch(plain, 256)
	pb.Add(ms[0])
	require.Equal(t, 1, plain.n, "an accumulator without batches gets each metric as it comes")
	pb.Flush()
	require.Equal(t, 1, plain.n)
}

// loopInput adds n line metrics in one gather, one by one or in batches of 256.
type loopInput struct {
	n     int
	batch bool
}

func (in *loopInput) Gather(_ context.Context, acc Accumulator) error {
	m := NewLineMetric(LineText{Text: "disk,device=sda,host=web-01 free=1i,used=2i"}, lineTime)
	if !in.batch {
		for range in.n {
			acc.AddMetric(m)
		}
		return nil
	}
	ba, ms := acc.(BatchAccumulator), make([]Metric, 256)
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
type discardLines struct{ discardOutput }

func (*discardLines) WritesLines() bool { return true }

// BenchmarkAccumulatorAdd measures carrying one line metric from an input into the buffer of
// an output that writes lines, one by one or in batches, while the output drains full
// batches as they come.
func BenchmarkAccumulatorAdd(b *testing.B) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "one_by_one", true: "batch_256"}[batch]
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Agent.OmitHostname = true
			cfg.AddInput("loop", &loopInput{n: b.N, batch: batch})
			out := &discardLines{}
			cfg.AddOutput("lines", out)
			a, err := NewAgent(cfg, AgentOptions{Logger: quietLogger()})
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			require.NoError(b, a.Once(context.Background()))
			b.StopTimer()
			require.Equal(b, int64(b.N), a.gathered.Get())
			b.ReportMetric(float64(out.n.Load())/float64(b.N), "written/op")
		})
	}
}
