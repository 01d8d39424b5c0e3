package internal

import (
	"math"
	"regexp"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// register adds one instance's series as the agent would: tags with the instance's "_id".
func register(r *selfstat.Registry, id, test string, calls, writes int64) {
	s := r.NewSeries("internal_mytest", map[string]string{"test": test, selfstat.IDTag: id})
	s.Counter("calls").Add(calls)
	s.Counter("writes").Add(writes)
}

// TestPerInstance follows Telegraf's TestPerInstance and TestAccumulatedPerType: without
// per_instance the instances of a plugin with equal tags are summed and "_id" is dropped;
// with it, each instance is a series of its own, tagged with its "_id". Instances with one
// ID (identical configs) count as one, as they share their counters in Telegraf.
func TestPerInstance(t *testing.T) {
	tests := []struct {
		name        string
		perInstance bool
		want        []series
	}{
		{
			name: "summed per plugin type",
			want: []series{
				{Name: "internal_mytest", Tags: map[string]string{"test": "foo", "version": "unknown"}, Fields: map[string]int64{"calls": 21 + 7, "writes": 63 + 1}},
				{Name: "internal_mytest", Tags: map[string]string{"test": "bar", "version": "unknown"}, Fields: map[string]int64{"calls": 201, "writes": 402}},
			},
		},
		{
			name:        "per instance",
			perInstance: true,
			want: []series{
				{Name: "internal_mytest", Tags: map[string]string{"_id": "id-0", "test": "foo", "version": "unknown"}, Fields: map[string]int64{"calls": 10 + 7, "writes": 30 + 1}},
				{Name: "internal_mytest", Tags: map[string]string{"_id": "id-1", "test": "foo", "version": "unknown"}, Fields: map[string]int64{"calls": 11, "writes": 33}},
				{Name: "internal_mytest", Tags: map[string]string{"_id": "id-10", "test": "bar", "version": "unknown"}, Fields: map[string]int64{"calls": 100, "writes": 200}},
				{Name: "internal_mytest", Tags: map[string]string{"_id": "id-11", "test": "bar", "version": "unknown"}, Fields: map[string]int64{"calls": 101, "writes": 202}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := selfstat.New()
			register(r, "id-0", "foo", 10, 30)
			register(r, "id-1", "foo", 11, 33)
			register(r, "id-10", "bar", 100, 200)
			register(r, "id-11", "bar", 101, 202)
			register(r, "id-0", "foo", 7, 1) // a second instance with the first one's config
			s := &Self{PerInstance: tt.perInstance}
			s.SetSelfStats(r)
			require.Equal(t, tt.want, seriesOf(gather(t, s)))
		})
	}
}

func TestVersionTags(t *testing.T) {
	r := selfstat.New()
	r.SetVersion("1.2.3")
	r.Counter("internal_agent", nil, "metrics_written").Add(4)
	r.NewSeries("internal_gather", map[string]string{"input": "cpu", "version": "mine"}).Counter("errors")
	s := &Self{}
	s.SetSelfStats(r)
	require.Equal(t, []series{
		{Name: "internal_agent", Tags: map[string]string{"version": "1.2.3", "go_version": goVersion}, Fields: map[string]int64{"metrics_written": 4}},
		{Name: "internal_gather", Tags: map[string]string{"input": "cpu", "version": "mine"}, Fields: map[string]int64{"errors": 0}},
	}, seriesOf(gather(t, s)), "a series' own tag is kept")
}

func TestGostats(t *testing.T) {
	ms := gather(t, &Self{CollectGostats: true})
	require.Len(t, ms, 1)
	m := ms[0]
	require.Equal(t, "internal_gostats", m.Name())
	require.Equal(t, []morse.Tag{{Key: "go_version", Value: goVersion}}, m.Tags())
	require.Greater(t, len(m.Fields()), 50, "every runtime/metrics name")
	name := regexp.MustCompile(`^[a-z0-9_]+$`)
	for _, f := range m.Fields() {
		require.Regexp(t, name, f.Key, "Telegraf's sanitised name")
		switch f.Value.Type() {
		case morse.TypeUint:
		case morse.TypeFloat:
			require.False(t, math.IsInf(f.Value.Float(), 0) || math.IsNaN(f.Value.Float()), f.Key)
		default:
			require.Failf(t, "wrong type", "%s is %s", f.Key, f.Value.Type())
		}
	}
	goroutines, ok := m.Field("sched_goroutines_goroutines")
	require.True(t, ok)
	require.Equal(t, morse.TypeUint, goroutines.Type())
	require.Positive(t, goroutines.Uint())
	pauses, ok := m.Field("gc_pauses_seconds")
	if ok {
		require.Equal(t, morse.TypeFloat, pauses.Type(), "a histogram is reduced to its median bucket")
	}
}

func TestMedianBucket(t *testing.T) {
	tests := []struct {
		name    string
		counts  []uint64
		buckets []float64
		want    float64
	}{
		{name: "median in the middle bucket", counts: []uint64{1, 5, 1}, buckets: []float64{0, 1, 2, 3}, want: 1},
		{name: "median in the first bucket", counts: []uint64{9, 1, 0}, buckets: []float64{0, 1, 2, 3}, want: 0},
		{name: "empty", counts: []uint64{0, 0}, buckets: []float64{math.Inf(-1), 1, 2}, want: math.Inf(-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, medianBucket(&metrics.Float64Histogram{Counts: tt.counts, Buckets: tt.buckets}))
		})
	}
}
