package selfstat

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSeriesOfEqualTagsStaySeparate(t *testing.T) {
	r := New()
	a := r.NewSeries("internal_write", map[string]string{"output": "sink"})
	b := r.NewSeries("internal_write", map[string]string{"output": "sink"})
	a.Counter("metrics_written").Add(3)
	b.Counter("metrics_written").Add(5)
	snap := r.Snapshot()
	require.Len(t, snap, 2)
	require.Equal(t, int64(3), snap[0].Fields[0].Value)
	require.Equal(t, int64(5), snap[1].Fields[0].Value)
}

func TestSharedCounterAliasAndRemove(t *testing.T) {
	r := New()
	c := r.Counter("internal_agent", nil, "metrics_gathered")
	require.Same(t, c, r.Counter("internal_agent", nil, "metrics_gathered"), "shared series are looked up, not duplicated")
	s := r.NewSeries("internal_write", map[string]string{"output": "x", "alias": "a"})
	errs := s.Counter("errors")
	s.Alias("write_errors", errs)
	errs.Add(2)
	snap := r.Snapshot()
	require.Equal(t, []Tag{{"alias", "a"}, {"output", "x"}}, snap[1].Tags, "tags are sorted")
	require.Equal(t, []Field{{"errors", 2}, {"write_errors", 2}}, snap[1].Fields)
	r.Remove(s)
	require.Len(t, r.Snapshot(), 1)
}

func TestCountersAreSafeForConcurrentUse(t *testing.T) {
	r := New()
	c := r.Counter("m", nil, "n")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Incr()
				_ = r.Snapshot()
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(8000), c.Get())
}

func TestTimingReportsTheMeanSinceTheLastReport(t *testing.T) {
	tests := []struct {
		name    string
		periods [][]int64 // durations recorded before each report
		want    []int64   // what each report says
	}{
		{name: "mean of each period", periods: [][]int64{{100, 200}, {50}}, want: []int64{150, 50}},
		{name: "a period without timings repeats the last mean", periods: [][]int64{{90, 110}, nil, nil}, want: []int64{100, 100, 100}},
		{name: "never recorded", periods: [][]int64{nil}, want: []int64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New()
			s := r.NewSeries("internal_gather", map[string]string{"input": "cpu"})
			c := s.Timing("gather_time_ns")
			require.Same(t, c, s.Timing("gather_time_ns"))
			var got []int64
			for _, p := range tt.periods {
				for _, d := range p {
					c.Add(d)
				}
				got = append(got, r.Snapshot()[0].Fields[0].Value)
				require.Equal(t, got[len(got)-1], c.Get(), "Get reads what the last report said")
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTeeFeedsATotal(t *testing.T) {
	r := New()
	total := r.Counter("internal_agent", nil, "write_errors")
	a := r.NewSeries("internal_write", map[string]string{"output": "a"}).Counter("write_errors")
	b := r.NewSeries("internal_write", map[string]string{"output": "b"}).Counter("write_errors")
	a.Tee(total)
	b.Tee(total)
	a.Add(2)
	b.Incr()
	require.Equal(t, int64(3), total.Get())
	require.Equal(t, int64(2), a.Get())
	b.Tee(nil)
	b.Incr()
	require.Equal(t, int64(3), total.Get(), "untied, b counts alone")
	require.Equal(t, int64(2), b.Get())
}

func TestVersion(t *testing.T) {
	r := New()
	require.Equal(t, "unknown", r.Version(), "Telegraf's word for a build without a version")
	r.SetVersion("1.2.3")
	require.Equal(t, "1.2.3", r.Version())
}

func TestSerializerStatsAreSharedPerFormat(t *testing.T) {
	r := New()
	a := NewSerializerStats(r, "influx")
	b := NewSerializerStats(r, "influx")
	j := NewSerializerStats(r, "json")
	a.Serialized(3, 120, 50)
	b.Serialized(2, 80, 30)
	b.Failed(1)
	j.Serialized(1, 40, 10)
	nilStats := NewSerializerStats(nil, "influx")
	require.Nil(t, nilStats)
	nilStats.Serialized(1, 1, 1) // counts nothing, and does not panic
	nilStats.Failed(1)
	require.Equal(t, []Sample{
		{Measurement: "internal_serializer", Tags: []Tag{{"type", "influx"}}, Fields: []Field{
			{"errors", 1}, {"metrics_serialized", 5}, {"bytes_serialized", 200}, {"serialization_time_ns", 80}}},
		{Measurement: "internal_serializer", Tags: []Tag{{"type", "json"}}, Fields: []Field{
			{"errors", 0}, {"metrics_serialized", 1}, {"bytes_serialized", 40}, {"serialization_time_ns", 10}}},
	}, r.Snapshot())
}
