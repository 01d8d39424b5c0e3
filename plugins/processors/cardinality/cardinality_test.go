package cardinality

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// newGuard returns an initialised guard with a fixed clock, its log and its stats.
func newGuard(t testing.TB, set func(*Guard)) (*Guard, *bytes.Buffer, *selfstat.Registry) {
	t.Helper()
	g := New()
	g.Now = func() time.Time { return t0 }
	if set != nil {
		set(g)
	}
	var logs bytes.Buffer
	g.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	reg := selfstat.New()
	g.SetStats(selfstat.NewPluginStats(reg, "internal_cardinality", map[string]string{"alias": "test"}))
	require.NoError(t, g.Init())
	return g, &logs, reg
}

func metric(name string, tags ...string) morse.Metric {
	var ts []morse.Tag
	for i := 0; i+1 < len(tags); i += 2 {
		ts = append(ts, morse.Tag{Key: tags[i], Value: tags[i+1]})
	}
	return morse.NewMetric(name, ts, []morse.Field{{Key: "v", Value: morse.Int(1)}}, t0)
}

func stat(reg *selfstat.Registry, field string) int64 {
	for _, s := range reg.Snapshot() {
		for _, f := range s.Fields {
			if f.Key == field {
				return f.Value
			}
		}
	}
	return -1
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		set     func(*Guard)
		wantErr string
	}{
		{"defaults", func(*Guard) {}, ""},
		{"max_values", func(g *Guard) { g.MaxValues = 0 }, "max_values: must be at least 1"},
		{"window", func(g *Guard) { g.Window = morse.Duration(time.Millisecond) }, "window: must be at least 1s"},
		{"action", func(g *Guard) { g.Action = "tag" }, `action: must be "field", "drop_tag" or "drop_metric", got "tag"`},
		{"reset_after", func(g *Guard) { g.ResetAfter = -1 }, "reset_after: must not be negative"},
		{"max_memory", func(g *Guard) { g.MaxMemory = 1000 }, "max_memory: must be at least 256KiB"},
		{"glob", func(g *Guard) { g.Deny = []string{"[a"} }, "deny: invalid pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New()
			tt.set(g)
			err := g.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// A key trips once, is logged once with its estimate, and counted.
func TestTripLogsOnceAndCounts(t *testing.T) {
	g, logs, reg := newGuard(t, func(g *Guard) { g.MaxValues = 100 })
	for i := range 1000 {
		g.Apply([]morse.Metric{metric("req", "host", "a", "id", fmt.Sprint(i))})
	}
	require.Equal(t, 1, strings.Count(logs.String(), "passed max_values"), logs.String())
	require.Contains(t, logs.String(), "measurement=req key=id estimate=101 max_values=100 window=1h0m0s action=field")
	require.Equal(t, int64(1), stat(reg, "trips"))
	require.Equal(t, int64(1000-100), stat(reg, "metrics_changed"), "every metric from the 101st value on")
	require.Equal(t, int64(900), stat(reg, "tags_converted"))
	require.Equal(t, int64(1), stat(reg, "keys_tripped"))
	require.Equal(t, int64(2), stat(reg, "keys_tracked"))
	require.Positive(t, stat(reg, "memory_bytes"))
}

// The InfluxDB output's signal: after Trip, the next metric of the key is converted although
// its estimate is far below max_values; reset_after counts from the refusal.
func TestTripFromServer(t *testing.T) {
	now := t0
	g, logs, reg := newGuard(t, func(g *Guard) {
		g.Now = func() time.Time { return now }
		g.ResetAfter = morse.Duration(10 * time.Minute)
		g.Allow = []string{"host"}
	})
	out := g.Apply([]morse.Metric{metric("req", "host", "a", "id", "1")})
	_, tagged := out[0].Tag("id")
	require.True(t, tagged)

	g.Trip("req", "id")
	g.Trip("req", "host")
	require.Contains(t, logs.String(), "refused a new value of this tag key (max-values-per-tag); acting on it from now on")
	require.Contains(t, logs.String(), "but allow exempts it; leaving it as it is")
	require.Equal(t, int64(1), stat(reg, "server_trips"))

	out = g.Apply([]morse.Metric{metric("req", "host", "a", "id", "1")})
	v, ok := out[0].Field("id")
	require.True(t, ok, "converted after the server's refusal")
	require.Equal(t, "1", v.Str())
	_, tagged = out[0].Tag("host")
	require.True(t, tagged, "allow keeps host a tag")

	now = t0.Add(10 * time.Minute)
	out = g.Apply([]morse.Metric{metric("req", "host", "a", "id", "1")})
	_, tagged = out[0].Tag("id")
	require.True(t, tagged, "back to normal reset_after after the refusal")
	require.Equal(t, int64(1), stat(reg, "resets"))
	require.Contains(t, logs.String(), "calmed down")
}

// A line metric that the guard does not change is passed on as text, so that outputs that
// write text keep their fast path; one it changes is expanded.
func TestLineMetricsStayText(t *testing.T) {
	g, _, _ := newGuard(t, func(g *Guard) { g.Deny = []string{"trace"} })
	in := testutil.Parse(t, "req,host=a,id=1 v=1 1\nreq,host=a,trace=t v=1 1\n", true)
	_, isText := in[0].Line()
	require.True(t, isText)
	out := g.Apply(in)
	_, isText = out[0].Line()
	require.True(t, isText, "unchanged: still text")
	_, isText = out[1].Line()
	require.False(t, isText, "changed: expanded")
	v, _ := out[1].Field("trace")
	require.Equal(t, "t", v.Str())
}

// The steady path allocates nothing, for metrics held either way.
func TestSteadyPathAllocatesNothing(t *testing.T) {
	g, _, _ := newGuard(t, nil)
	plain := []morse.Metric{metric("cpu", "cpu", "cpu0", "host", "web-1", "region", "eu", "dc", "fra")}
	lines := testutil.Parse(t, "cpu,cpu=cpu0,host=web-1,region=eu,dc=fra usage=1 1\n", true)
	g.Apply(plain)
	g.Apply(lines)
	buf := make([]morse.Metric, 1)
	for name, in := range map[string][]morse.Metric{"plain": plain, "lines": lines} {
		allocs := testing.AllocsPerRun(1000, func() {
			copy(buf, in)
			g.Apply(buf)
		})
		require.Zero(t, allocs, name)
	}
}

// Apply from several inputs and Trip from an output at once: the race detector watches.
func TestConcurrentApplyAndTrip(t *testing.T) {
	g, _, reg := newGuard(t, func(g *Guard) { g.MaxValues = 50 })
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				g.Apply([]morse.Metric{metric(fmt.Sprint("m", w%2), "id", fmt.Sprint(i), "host", "h")})
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			g.Trip("m0", "host")
		}
	})
	wg.Wait()
	require.Equal(t, int64(2), stat(reg, "trips"), "id of m0 and of m1")
	require.Equal(t, int64(1), stat(reg, "server_trips"))
}

// A value that repeats is counted once per slot: the shortcut for a key whose value did not
// change since the last metric ends with the slot, so that a value seen all along stays in
// the window, and a value escaped in line-protocol text counts as the same value expanded.
func TestRepeatedValueStaysInTheWindow(t *testing.T) {
	now := t0
	g, _, _ := newGuard(t, func(g *Guard) {
		g.Window = morse.Duration(time.Hour)
		g.Now = func() time.Time { return now }
	})
	key := func() *keyState { return g.t.meas["req"].keys["region"] }
	for range 20 { // five windows, four slots each
		g.Apply([]morse.Metric{metric("req", "region", "eu west"), metric("req", "region", "eu west")})
		now = now.Add(15 * time.Minute)
	}
	require.InDelta(t, 1, key().win.estimate(), 0.01, "the value is still in the window")
	g.Apply(testutil.Parse(t, "req,region=eu\\ west v=1 1\nreq,region=us v=1 1\n", true))
	require.InDelta(t, 2, key().win.estimate(), 0.01, "the escaped value is the same value")
}
