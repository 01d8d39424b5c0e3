package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/filter"
)

// shapeProcessor changes each metric it is given as its name says, and records the sizes
// of the batches it was called with: "x" drops the metric, "d" doubles it (the copy is
// named with a trailing "2"), anything else gets the tag seen=1.
type shapeProcessor struct{ calls []int }

func (p *shapeProcessor) Apply(in []morse.Metric) []morse.Metric {
	p.calls = append(p.calls, len(in))
	var out []morse.Metric
	for _, m := range in {
		switch {
		case strings.HasPrefix(m.Name(), "x"):
		case strings.HasPrefix(m.Name(), "d"):
			out = append(out, m, m.WithName(m.Name()+"2"))
		default:
			out = append(out, m.WithTag("seen", "1"))
		}
	}
	if len(out) <= len(in) {
		return append(in[:0], out...) // in place, as most processors do
	}
	return out
}

// TestFilteredProcessorGetsRunsOfSelectedMetrics: a processor with a filter is called once
// per run of consecutive metrics the filter selects, and the result keeps the order of the
// input, whether the processor drops metrics, adds them, or changes them in place.
func TestFilteredProcessorGetsRunsOfSelectedMetrics(t *testing.T) {
	sel, err := filter.New(filter.Config{NameDrop: []string{"skip*"}})
	require.NoError(t, err)
	for _, tt := range []struct {
		name  string
		in    string // metric names, space-separated
		want  string // names, with * for seen=1
		calls []int
	}{
		{"all selected", "a b c", "a* b* c*", []int{3}},
		{"none selected", "skip1 skip2", "skip1 skip2", nil},
		{"runs", "a b skip1 c skip2 skip3 e f", "a* b* skip1 c* skip2 skip3 e* f*", []int{2, 1, 2}},
		{"drops", "x1 skip1 x2 a", "skip1 a*", []int{1, 2}},
		{"adds at the start", "d1 d2 skip1 skip2 a", "d1 d12 d2 d22 skip1 skip2 a*", []int{2, 1}},
		{"adds at the end", "skip1 a d1", "skip1 a* d1 d12", []int{2}},
		{"adds then drops", "d1 skip1 x1 x2 b skip2", "d1 d12 skip1 b* skip2", []int{1, 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &shapeProcessor{}
			rp := &runningProcessor{cfg: &config.ProcessorConfig{Filter: sel}, plugin: p}
			var ms []morse.Metric
			for _, n := range strings.Fields(tt.in) {
				ms = append(ms, morse.NewMetric(n, nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Unix(1, 0)))
			}
			var got []string
			for _, m := range rp.apply(ms) {
				if _, ok := m.Tag("seen"); ok {
					got = append(got, m.Name()+"*")
					continue
				}
				got = append(got, m.Name())
			}
			require.Equal(t, strings.Fields(tt.want), got)
			require.Equal(t, tt.calls, p.calls)
		})
	}
}
