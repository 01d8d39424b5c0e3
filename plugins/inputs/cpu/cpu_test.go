package cpu

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// tick is what the machine reports at one moment: each CPU and the total.
type tick struct {
	per   []cpu.TimesStat
	total cpu.TimesStat
}

// fakeSource replays ticks. The test moves to the next tick with advance, so the samples
// that Init and each Gather see are fixed in advance.
type fakeSource struct {
	mu    sync.Mutex
	ticks []tick
	at    int
	err   error
}

func (f *fakeSource) times(_ context.Context, perCPU bool) ([]cpu.TimesStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	tk := f.ticks[f.at]
	if perCPU {
		return append([]cpu.TimesStat(nil), tk.per...), nil
	}
	return []cpu.TimesStat{tk.total}, nil
}

func (f *fakeSource) advance() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at++
}

// ts builds a sample: user, system, idle, nice, iowait, irq, softirq, steal, guest, guestNice.
func ts(name string, v ...float64) cpu.TimesStat {
	v = append(v, make([]float64, 10)...)
	return cpu.TimesStat{CPU: name, User: v[0], System: v[1], Idle: v[2], Nice: v[3], Iowait: v[4],
		Irq: v[5], Softirq: v[6], Steal: v[7], Guest: v[8], GuestNice: v[9]}
}

// sum adds samples field by field, to build a consistent cpu-total.
func sum(name string, samples ...cpu.TimesStat) cpu.TimesStat {
	out := cpu.TimesStat{CPU: name}
	for _, s := range samples {
		out.User += s.User
		out.System += s.System
		out.Idle += s.Idle
		out.Nice += s.Nice
		out.Iowait += s.Iowait
		out.Irq += s.Irq
		out.Softirq += s.Softirq
		out.Steal += s.Steal
		out.Guest += s.Guest
		out.GuestNice += s.GuestNice
	}
	return out
}

func mkTick(per ...cpu.TimesStat) tick {
	return tick{per: per, total: sum("cpu-total", per...)}
}

func keysOf(m morse.Metric) []string {
	var out []string
	for _, f := range m.Fields() {
		out = append(out, f.Key)
	}
	return out
}

func cpuNames(ms []morse.Metric) []string {
	var out []string
	for _, m := range ms {
		v, _ := m.Tag("cpu")
		out = append(out, v)
	}
	return out
}

// gatherOnce runs Init, moves to the next tick, and gathers once.
func gatherOnce(t *testing.T, c *CPU, src *fakeSource) *testutil.Accumulator {
	t.Helper()
	c.Times = src.times
	require.NoError(t, c.Init())
	src.advance()
	acc := &testutil.Accumulator{}
	require.NoError(t, c.Gather(context.Background(), acc))
	return acc
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("cpu")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "[[inputs.cpu]]\n"), "sample.conf starts with its header")

	c, ok := info.New().(*CPU)
	require.True(t, ok)
	require.True(t, c.PerCPU)
	require.True(t, c.TotalCPU)
	require.False(t, c.CollectCPUTime)
	require.False(t, c.ReportActive)
	require.False(t, c.CoreTags)

	// The sample shows every option at its default, and every key in it is one the plugin knows.
	var doc struct {
		Inputs struct {
			CPU []map[string]any `toml:"cpu"`
		} `toml:"inputs"`
	}
	_, err := toml.Decode(info.SampleConfig, &doc)
	require.NoError(t, err)
	require.Len(t, doc.Inputs.CPU, 1)
	require.Equal(t, map[string]any{
		"percpu": true, "totalcpu": true, "collect_cpu_time": false, "report_active": false, "core_tags": false,
	}, doc.Inputs.CPU[0])
	fresh := &CPU{}
	md, err := toml.Decode(strings.TrimPrefix(info.SampleConfig, "[[inputs.cpu]]\n"), fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.True(t, fresh.PerCPU && fresh.TotalCPU)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name            string
		perCPU, total   bool
		wantErrContains string
	}{
		{name: "both", perCPU: true, total: true},
		{name: "per cpu only", perCPU: true},
		{name: "total only", total: true},
		{name: "neither", wantErrContains: "percpu: percpu and totalcpu are both false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&CPU{PerCPU: tt.perCPU, TotalCPU: tt.total}).Validate()
			if tt.wantErrContains == "" {
				require.NoError(t, err)
				return
			}
			var fe *morse.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "percpu", fe.Key)
			require.ErrorContains(t, err, tt.wantErrContains)
		})
	}
}

func TestUsageMath(t *testing.T) {
	// Deltas chosen so that every percentage is exact in binary floating point.
	base := ts("cpu0", 1000, 500, 8000, 50, 40, 30, 20, 10, 100, 4)
	tests := []struct {
		name string
		next cpu.TimesStat
		want map[string]any
	}{
		{
			name: "total delta 100",
			// +30 user (5 of it guest), +10 system, +40 idle, +6 nice (2 of it guest_nice),
			// +4 iowait, +3 irq, +2 softirq, +5 steal.
			next: ts("cpu0", 1030, 510, 8040, 56, 44, 33, 22, 15, 105, 6),
			want: map[string]any{
				"usage_user": 25.0, "usage_system": 10.0, "usage_idle": 40.0, "usage_nice": 4.0,
				"usage_iowait": 4.0, "usage_irq": 3.0, "usage_softirq": 2.0, "usage_steal": 5.0,
				"usage_guest": 5.0, "usage_guest_nice": 2.0, "usage_active": 60.0,
			},
		},
		{
			name: "total delta 8, all idle but one tick",
			next: ts("cpu0", 1000, 501, 8007, 50, 40, 30, 20, 10, 100, 4),
			want: map[string]any{
				"usage_user": 0.0, "usage_system": 12.5, "usage_idle": 87.5, "usage_nice": 0.0,
				"usage_iowait": 0.0, "usage_irq": 0.0, "usage_softirq": 0.0, "usage_steal": 0.0,
				"usage_guest": 0.0, "usage_guest_nice": 0.0, "usage_active": 12.5,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{ticks: []tick{{per: []cpu.TimesStat{base}}, {per: []cpu.TimesStat{tt.next}}}}
			c := New()
			c.TotalCPU = false
			c.ReportActive = true
			acc := gatherOnce(t, c, src)
			ms := acc.Metrics()
			require.Len(t, ms, 1)
			require.Equal(t, "cpu", ms[0].Name())
			require.Equal(t, map[string]string{"cpu": "cpu0"}, testutil.TagsOf(ms[0]))
			require.Equal(t, tt.want, testutil.FieldsOf(ms[0]))
			require.Empty(t, acc.Errors())
		})
	}
}

func TestOptions(t *testing.T) {
	usage := []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
		"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}
	times := []string{"time_user", "time_system", "time_idle", "time_nice", "time_iowait",
		"time_irq", "time_softirq", "time_steal", "time_guest", "time_guest_nice"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name                           string
		perCPU, total, cpuTime, active bool
		wantCPUs, wantFields           []string
	}{
		{name: "defaults", perCPU: true, total: true,
			wantCPUs: []string{"cpu0", "cpu1", "cpu-total"}, wantFields: usage},
		{name: "per cpu only", perCPU: true,
			wantCPUs: []string{"cpu0", "cpu1"}, wantFields: usage},
		{name: "total only", total: true,
			wantCPUs: []string{"cpu-total"}, wantFields: usage},
		{name: "report_active", total: true, active: true,
			wantCPUs: []string{"cpu-total"}, wantFields: cat(usage, []string{"usage_active"})},
		{name: "collect_cpu_time", total: true, cpuTime: true,
			wantCPUs: []string{"cpu-total"}, wantFields: cat(times, usage)},
		{name: "collect_cpu_time and report_active", perCPU: true, cpuTime: true, active: true,
			wantCPUs:   []string{"cpu0", "cpu1"},
			wantFields: cat(times, []string{"time_active"}, usage, []string{"usage_active"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{ticks: []tick{
				mkTick(ts("cpu0", 10, 10, 80), ts("cpu1", 20, 20, 60)),
				mkTick(ts("cpu0", 15, 15, 170), ts("cpu1", 30, 30, 140)),
			}}
			c := &CPU{PerCPU: tt.perCPU, TotalCPU: tt.total, CollectCPUTime: tt.cpuTime, ReportActive: tt.active}
			acc := gatherOnce(t, c, src)
			ms := acc.Metrics()
			require.Equal(t, tt.wantCPUs, cpuNames(ms))
			for _, m := range ms {
				require.Equal(t, tt.wantFields, keysOf(m))
				require.Len(t, m.Tags(), 1, "no core tags without core_tags")
			}
		})
	}
}

func TestCollectCPUTimeValues(t *testing.T) {
	src := &fakeSource{ticks: []tick{
		{total: ts("cpu-total", 1, 2, 3, 4, 5, 6, 7, 8, 0.5, 0.25)},
		{total: ts("cpu-total", 1.5, 2, 3, 4, 5, 6, 7, 8, 0.5, 0.25)},
	}}
	c := &CPU{TotalCPU: true, CollectCPUTime: true, ReportActive: true}
	acc := gatherOnce(t, c, src)
	ms := acc.Metrics()
	require.Len(t, ms, 1)
	got := testutil.FieldsOf(ms[0])
	for key, want := range map[string]float64{
		"time_user": 1.5, "time_system": 2, "time_idle": 3, "time_nice": 4, "time_iowait": 5,
		"time_irq": 6, "time_softirq": 7, "time_steal": 8, "time_guest": 0.5, "time_guest_nice": 0.25,
		// active = user+system+nice+iowait+irq+softirq+steal, guest excluded (inside user).
		"time_active": 1.5 + 2 + 4 + 5 + 6 + 7 + 8,
	} {
		require.Equal(t, want, got[key], key)
	}
}
