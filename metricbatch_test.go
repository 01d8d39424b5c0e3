package morse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
	ms := []Metric{
		NewLineMetric(LineText{Text: "m,t=a v=1i"}, time.Unix(1, 0)),
		NewMetric("cpu", nil, []Field{{Key: "idle", Value: Float(99.5)}}, time.Unix(1, 0)),
		NewLineMetric(LineText{Text: "skip v=2i"}, time.Unix(1, 0)),
	}
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
