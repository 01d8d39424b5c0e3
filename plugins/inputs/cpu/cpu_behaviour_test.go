package cpu

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestFirstGatherFallsBackToUsageSinceBoot(t *testing.T) {
	// 25 s user, 75 s idle since boot: usage since boot is 25% user, 75% idle.
	sinceBoot := map[string]any{
		"usage_user": 25.0, "usage_system": 0.0, "usage_idle": 75.0, "usage_nice": 0.0,
		"usage_iowait": 0.0, "usage_irq": 0.0, "usage_softirq": 0.0, "usage_steal": 0.0,
		"usage_guest": 0.0, "usage_guest_nice": 0.0,
	}
	tests := []struct {
		name      string
		initFails bool
	}{
		{name: "counters did not move since Init"},
		{name: "Init could not take a baseline", initFails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{ticks: []tick{{total: ts("cpu-total", 25, 0, 75)}}}
			c := &CPU{TotalCPU: true, Times: src.times}
			c.SetLogger(slog.New(slog.DiscardHandler))
			if tt.initFails {
				src.err = errors.New("no /proc/stat")
			}
			require.NoError(t, c.Init(), "a missing baseline does not stop the agent")
			src.err = nil

			acc := &testutil.Accumulator{}
			require.NoError(t, c.Gather(context.Background(), acc))
			ms := acc.Metrics()
			require.Len(t, ms, 1)
			require.Equal(t, sinceBoot, testutil.FieldsOf(ms[0]))

			// After the first gather, a zero interval means "too soon" as in Telegraf:
			// no usage, and without time fields no metric at all.
			acc.Clear()
			require.NoError(t, c.Gather(context.Background(), acc))
			require.Empty(t, acc.Metrics())
			require.Empty(t, acc.Errors())
		})
	}
}

func TestCountersGoingBackwards(t *testing.T) {
	src := &fakeSource{ticks: []tick{
		{per: []cpu.TimesStat{ts("cpu0", 100, 0, 100), ts("cpu1", 100, 0, 100)}},
		// cpu0 went backwards (hotplugged away and back); cpu1 moved on normally.
		{per: []cpu.TimesStat{ts("cpu0", 10, 0, 10), ts("cpu1", 150, 0, 150)}},
		// Both move on: cpu0 is measured from the sample that went backwards.
		{per: []cpu.TimesStat{ts("cpu0", 20, 0, 40), ts("cpu1", 160, 0, 190)}},
	}}
	c := &CPU{PerCPU: true, CollectCPUTime: true}
	acc := gatherOnce(t, c, src)

	ms := acc.Metrics()
	require.Equal(t, []string{"cpu0", "cpu1"}, cpuNames(ms), "time fields are still reported for cpu0")
	require.NotContains(t, testutil.FieldsOf(ms[0]), "usage_idle", "no usage from counters that went backwards")
	require.Equal(t, 50.0, testutil.FieldsOf(ms[1])["usage_idle"])
	errs := acc.Errors()
	require.Len(t, errs, 1, "one error per gather, naming every affected CPU")
	require.ErrorContains(t, errs[0], "current total CPU time is less than previous total CPU time for cpu0 ")

	acc.Clear()
	src.advance()
	require.NoError(t, c.Gather(context.Background(), acc))
	ms = acc.Metrics()
	require.Equal(t, []string{"cpu0", "cpu1"}, cpuNames(ms))
	require.Equal(t, 25.0, testutil.FieldsOf(ms[0])["usage_user"], "10 of 40 s since the backwards sample")
	require.Equal(t, 75.0, testutil.FieldsOf(ms[0])["usage_idle"])
	require.Equal(t, 80.0, testutil.FieldsOf(ms[1])["usage_idle"])
	require.Empty(t, acc.Errors())
}

func TestCPUsAppearingAndDisappearing(t *testing.T) {
	src := &fakeSource{ticks: []tick{
		{per: []cpu.TimesStat{ts("cpu0", 10, 0, 10)}},
		{per: []cpu.TimesStat{ts("cpu0", 20, 0, 20)}},
		{per: []cpu.TimesStat{ts("cpu0", 30, 0, 30), ts("cpu1", 5, 0, 5)}},
		{per: []cpu.TimesStat{ts("cpu1", 10, 0, 10)}},
	}}
	c := &CPU{PerCPU: true}
	acc := gatherOnce(t, c, src)
	require.Equal(t, []string{"cpu0"}, cpuNames(acc.Metrics()))

	// cpu1 comes online: like Telegraf, it waits for a second sample.
	acc.Clear()
	src.advance()
	require.NoError(t, c.Gather(context.Background(), acc))
	require.Equal(t, []string{"cpu0"}, cpuNames(acc.Metrics()))

	// cpu0 goes offline: it is simply no longer reported.
	acc.Clear()
	src.advance()
	require.NoError(t, c.Gather(context.Background(), acc))
	ms := acc.Metrics()
	require.Equal(t, []string{"cpu1"}, cpuNames(ms))
	require.Equal(t, 50.0, testutil.FieldsOf(ms[0])["usage_user"])
	require.Empty(t, acc.Errors())
}

func TestCoreTags(t *testing.T) {
	infos := []cpu.InfoStat{
		{CPU: 0, CoreID: "0", PhysicalID: "0"},
		{CPU: 1, CoreID: "1", PhysicalID: "0"},
	}
	tests := []struct {
		name     string
		coreTags bool
		infoErr  error
		want     []map[string]string
	}{
		{name: "core_tags on", coreTags: true, want: []map[string]string{
			{"cpu": "cpu0", "core_id": "0", "physical_id": "0"},
			{"cpu": "cpu1", "core_id": "1", "physical_id": "0"},
			{"cpu": "cpu-total"},
		}},
		{name: "core_tags off", want: []map[string]string{
			{"cpu": "cpu0"}, {"cpu": "cpu1"}, {"cpu": "cpu-total"},
		}},
		{name: "identities unreadable", coreTags: true, infoErr: errors.New("no /proc/cpuinfo"),
			want: []map[string]string{{"cpu": "cpu0"}, {"cpu": "cpu1"}, {"cpu": "cpu-total"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{ticks: []tick{
				mkTick(ts("cpu0", 1, 0, 1), ts("cpu1", 1, 0, 1)),
				mkTick(ts("cpu0", 2, 0, 2), ts("cpu1", 2, 0, 2)),
			}}
			c := New()
			c.CoreTags = tt.coreTags
			c.SetLogger(slog.New(slog.DiscardHandler))
			c.Info = func(context.Context) ([]cpu.InfoStat, error) { return infos, tt.infoErr }
			acc := gatherOnce(t, c, src)
			var got []map[string]string
			for _, m := range acc.Metrics() {
				got = append(got, testutil.TagsOf(m))
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestGatherFailsWhenCountersCannotBeRead(t *testing.T) {
	src := &fakeSource{ticks: []tick{{total: ts("cpu-total", 1, 0, 1)}}}
	c := &CPU{TotalCPU: true, Times: src.times}
	require.NoError(t, c.Init())
	src.err = errors.New("permission denied")
	acc := &testutil.Accumulator{}
	err := c.Gather(context.Background(), acc)
	require.ErrorContains(t, err, "reading cpu times: permission denied")
	require.Empty(t, acc.Metrics())
}

func TestConcurrentGathers(t *testing.T) {
	// The engine never overlaps gathers of one input, but an embedder might; the race
	// detector checks that the plugin's state survives it.
	src := &fakeSource{ticks: []tick{mkTick(ts("cpu0", 1, 0, 1))}}
	c := &CPU{PerCPU: true, TotalCPU: true, CollectCPUTime: true, Times: src.times}
	require.NoError(t, c.Init())
	acc := &testutil.Accumulator{}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { errs <- c.Gather(context.Background(), acc) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 16, acc.NMetrics(), "8 gathers of cpu0 and cpu-total")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/cpu.golden"
	shapes := testutil.LoadGolden(t, path)
	// The first gather right after Init, as `morse --test` does it.
	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	// The check is not vacuous: one name Telegraf does not have is caught.
	require.Equal(t, []string{"cpu: field usage_total: emitted but not in the golden list"},
		shapes.Check([]morse.Metric{ms[0].WithField("usage_total", morse.Float(1))}))
	require.Contains(t, cpuNames(ms), "cpu-total")
	require.Contains(t, cpuNames(ms), "cpu0")

	// The shares of one interval add up to 100%, guest included in user and nice once.
	parts := []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
		"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}
	for _, m := range ms {
		f := testutil.FieldsOf(m)
		total := 0.0
		for _, p := range parts {
			v := f[p].(float64)
			require.GreaterOrEqual(t, v, 0.0, p)
			total += v
		}
		require.InDelta(t, 100.0, total, 1e-6, "cpu %v", m.Tags())
	}
}

// TestFirstGatherIgnoresATickOrTwo: a first gather a few milliseconds after Init saw the
// counters move by one tick (0.01 s), which made usage 100% user; with less than
// minFirstWindow since Init it reports usage since boot instead, and from minFirstWindow on
// the interval since Init.
func TestFirstGatherIgnoresATickOrTwo(t *testing.T) {
	tests := []struct {
		name       string
		user, idle float64 // seconds since Init
		sinceBoot  bool
	}{
		{name: "one tick of user", user: 0.01, sinceBoot: true},
		{name: "one tick of idle", idle: 0.01, sinceBoot: true},
		{name: "49 ticks", user: 0.2, idle: 0.29, sinceBoot: true},
		{name: "50 ticks", user: 0.1, idle: 0.4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{ticks: []tick{
				{total: ts("cpu-total", 25, 0, 75)},
				{total: ts("cpu-total", 25+tt.user, 0, 75+tt.idle)},
			}}
			acc := gatherOnce(t, &CPU{TotalCPU: true}, src)
			ms := acc.Metrics()
			require.Len(t, ms, 1)
			want := 100 * tt.user / (tt.user + tt.idle) // over the interval since Init
			if tt.sinceBoot {
				want = 100 * (25 + tt.user) / (100 + tt.user + tt.idle) // near 25%, never 100% or 0%
			}
			require.InDelta(t, want, testutil.FieldsOf(ms[0])["usage_user"], 1e-9)
		})
	}
}
