package internal

import (
	"context"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// The agent hands over its registry through this method, found by type assertion.
var _ interface{ SetSelfStats(*selfstat.Registry) } = (*Self)(nil)

// series is a metric reduced to what the tests compare: name, tags and integer fields.
type series struct {
	Name   string
	Tags   map[string]string
	Fields map[string]int64
}

func seriesOf(ms []morse.Metric) []series {
	var out []series
	for _, m := range ms {
		s := series{Name: m.Name(), Tags: map[string]string{}, Fields: map[string]int64{}}
		for _, t := range m.Tags() {
			s.Tags[t.Key] = t.Value
		}
		for _, f := range m.Fields() {
			if f.Value.Type() == morse.TypeUint {
				s.Fields[f.Key] = int64(f.Value.Uint())
			} else {
				s.Fields[f.Key] = f.Value.Int()
			}
		}
		out = append(out, s)
	}
	return out
}

var goVersion = strings.TrimPrefix(runtime.Version(), "go")

func gather(t *testing.T, s *Self) []morse.Metric {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())
	return acc.Metrics()
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("internal")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "[[inputs.internal]]\n"), "sample.conf starts with its header")
	s, ok := info.New().(*Self)
	require.True(t, ok)
	require.True(t, s.CollectMemstats)

	// The sample shows each option commented out at its default; uncommented, every key is
	// one the plugin knows and every value is the default.
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(strings.TrimPrefix(info.SampleConfig, "[[inputs.internal]]\n"), "$1")
	require.Contains(t, body, "collect_memstats = true")
	fresh := &Self{}
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.True(t, fresh.CollectMemstats)
	require.False(t, fresh.CollectGostats)
	require.False(t, fresh.PerInstance)
}

func TestMemstats(t *testing.T) {
	tests := []struct {
		name     string
		memstats bool
		want     []string
	}{
		{name: "collect_memstats on, no registry: memstats only", memstats: true, want: []string{"internal_memstats"}},
		{name: "collect_memstats off, no registry: nothing", memstats: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := gather(t, &Self{CollectMemstats: tt.memstats})
			var names []string
			for _, m := range ms {
				names = append(names, m.Name())
			}
			require.Equal(t, tt.want, names)
			if len(ms) == 0 {
				return
			}
			var keys []string
			for _, f := range ms[0].Fields() {
				require.Equal(t, morse.TypeUint, f.Value.Type(), "%s: unsigned, as Telegraf emits runtime.MemStats", f.Key)
				keys = append(keys, f.Key)
			}
			require.Equal(t, []string{"alloc_bytes", "frees", "heap_alloc_bytes", "heap_idle_bytes",
				"heap_in_use_bytes", "heap_objects", "heap_released_bytes", "heap_sys_bytes", "mallocs",
				"num_gc", "pointer_lookups", "sys_bytes", "total_alloc_bytes"}, keys)
			require.Empty(t, ms[0].Tags())
		})
	}
}

func TestRegistrySeries(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *selfstat.Registry)
		want  []series
	}{
		{name: "empty registry", setup: func(*selfstat.Registry) {}},
		{
			name: "agent, gather, write and drop-by-reason series",
			setup: func(r *selfstat.Registry) {
				r.Counter("internal_agent", nil, "metrics_gathered").Add(5)
				r.Counter("internal_gather", map[string]string{"input": "cpu"}, "metrics_gathered").Add(5)
				r.Counter("internal_gather", map[string]string{"input": "cpu"}, "gather_time_ns").Set(1200)
				out := map[string]string{"output": "influxdb"}
				r.Counter("internal_write", out, "buffer_size").Set(7)
				r.Counter("internal_write", out, "metrics_written").Add(3)
				r.Counter("internal_write_dropped", map[string]string{"output": "influxdb", "reason": "buffer_full"}, "metrics_dropped").Add(2)
			},
			want: []series{
				{Name: "internal_agent", Tags: map[string]string{"version": "unknown", "go_version": goVersion},
					Fields: map[string]int64{"metrics_gathered": 5}},
				{Name: "internal_gather", Tags: map[string]string{"input": "cpu", "version": "unknown"},
					Fields: map[string]int64{"metrics_gathered": 5, "gather_time_ns": 1200}},
				{Name: "internal_write", Tags: map[string]string{"output": "influxdb", "version": "unknown"},
					Fields: map[string]int64{"buffer_size": 7, "metrics_written": 3}},
				{Name: "internal_write_dropped", Tags: map[string]string{"output": "influxdb", "reason": "buffer_full", "version": "unknown"},
					Fields: map[string]int64{"metrics_dropped": 2}},
			},
		},
		{
			name: "counters at zero are reported, removed series are not",
			setup: func(r *selfstat.Registry) {
				r.Counter("internal_write", map[string]string{"output": "file"}, "write_errors")
				gone := r.NewSeries("internal_write", map[string]string{"output": "gone"})
				gone.Counter("metrics_written").Incr()
				r.Remove(gone)
			},
			want: []series{
				{Name: "internal_write", Tags: map[string]string{"output": "file", "version": "unknown"}, Fields: map[string]int64{"write_errors": 0}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := selfstat.New()
			tt.setup(reg)
			s := &Self{}
			s.SetSelfStats(reg)
			require.Equal(t, tt.want, seriesOf(gather(t, s)))
		})
	}
}

func TestGatherReadsCurrentValues(t *testing.T) {
	reg := selfstat.New()
	c := reg.Counter("internal_agent", nil, "metrics_written")
	s := &Self{CollectMemstats: true}
	s.SetSelfStats(reg)

	c.Add(10)
	require.Equal(t, int64(10), seriesOf(gather(t, s))[0].Fields["metrics_written"])
	c.Add(5)
	require.Equal(t, int64(15), seriesOf(gather(t, s))[0].Fields["metrics_written"])

	s.SetSelfStats(nil)
	ms := gather(t, s)
	require.Len(t, ms, 1, "without a registry, memstats only")
	require.Equal(t, "internal_memstats", ms[0].Name())
}

func TestConcurrentUse(t *testing.T) {
	// The agent counts while the plugin gathers, and may swap the registry on reload; the
	// race detector checks all three at once, into one shared accumulator.
	reg := selfstat.New()
	counter := reg.Counter("internal_agent", nil, "metrics_gathered")
	s := New()
	s.SetSelfStats(reg)
	acc := &testutil.Accumulator{}
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { errs <- s.Gather(context.Background(), acc) })
		wg.Go(func() {
			counter.Incr()
			reg.Counter("internal_write", map[string]string{"output": "file"}, "metrics_written").Incr()
		})
		wg.Go(func() { s.SetSelfStats(reg) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(4), counter.Get())
	require.Len(t, acc.MetricsNamed("internal_memstats"), 4)
	require.Len(t, acc.MetricsNamed("internal_agent"), 4)
}

// goldenOnly keeps of internal_gostats the fields the golden list names: the others are
// every name the Go release offers, whose naming and types TestGostats checks.
func goldenOnly(t *testing.T, shapes testutil.Shapes, ms []morse.Metric) []morse.Metric {
	t.Helper()
	for i, m := range ms {
		if m.Name() != "internal_gostats" {
			continue
		}
		var keep []morse.Field
		for _, f := range m.Fields() {
			if f.Key == "gc_heap_goal_bytes" || f.Key == "sched_goroutines_goroutines" {
				keep = append(keep, f)
			}
		}
		require.Len(t, keep, 2, "the golden list's internal_gostats fields")
		ms[i] = m.WithFields(keep)
	}
	return ms
}

func TestGoldenRealGather(t *testing.T) {
	shapes, err := testutil.LoadShapes("testdata/internal.golden")
	require.NoError(t, err)
	s := New()
	md, err := toml.Decode(shapes.Config, s)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "the golden config uses Telegraf's option names")

	// The plugin alone has no agent, so only the runtime's measurements exist.
	alone := shapes
	alone.List = nil
	for _, sh := range shapes.List {
		if strings.HasPrefix(sh.Measurement, "internal_memstats") || sh.Measurement == "internal_gostats" {
			alone.List = append(alone.List, sh)
		}
	}
	ms := goldenOnly(t, shapes, gather(t, s))
	require.Len(t, ms, 2)
	require.Empty(t, alone.Check(ms))
	// With the defaults, no internal_gostats.
	require.Empty(t, alone.Defaults().Check(gather(t, New())))
	// The check is not vacuous: a missing measurement is caught, and so is a missing field.
	require.Contains(t, alone.Check(nil), "measurement internal_memstats: not emitted")
	trimmed := ms[0].WithFields(ms[0].Fields()[1:])
	require.Equal(t, []string{"internal_memstats: field alloc_bytes: missing"}, alone.Check([]morse.Metric{trimmed, ms[1]}))
	f := seriesOf(ms)[0].Fields
	require.Positive(t, f["sys_bytes"], "a running Go program has memory")
	require.GreaterOrEqual(t, f["mallocs"], f["frees"])
}
