package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// tripRecorder is a processor that records the keys it is told to act on.
type tripRecorder struct{ trips []string }

func (p *tripRecorder) Apply(in []morse.Metric) []morse.Metric { return in }
func (p *tripRecorder) Trip(measurement, key string)           { p.trips = append(p.trips, measurement+"."+key) }

// reporterOutput is an output that names a guard.
type reporterOutput struct {
	guard string
	trip  func(measurement, key string)
}

func (o *reporterOutput) Connect(context.Context) error                       { return nil }
func (o *reporterOutput) Write(context.Context, []morse.Metric) error         { return nil }
func (o *reporterOutput) Close() error                                        { return nil }
func (o *reporterOutput) TagLimitGuard() string                               { return o.guard }
func (o *reporterOutput) SetTagLimitGuard(trip func(measurement, key string)) { o.trip = trip }

func TestFindGuards(t *testing.T) {
	proc := func(name, alias string, p morse.Processor) *config.ProcessorConfig {
		pc := &config.ProcessorConfig{Name: name, Plugin: p, AfterAggregators: p, Source: name + "/" + alias}
		pc.Common.Alias = alias
		return pc
	}
	tests := []struct {
		name  string
		guard string
		procs func(a, b *tripRecorder) []*config.ProcessorConfig
		err   string
		want  []string // what a and b were told, joined
	}{
		{"by alias", "g", func(a, b *tripRecorder) []*config.ProcessorConfig {
			return []*config.ProcessorConfig{proc("cardinality", "", b), proc("cardinality", "g", a)}
		}, "", []string{"a:m.id"}},
		{"by name, without an alias", "cardinality", func(a, b *tripRecorder) []*config.ProcessorConfig {
			return []*config.ProcessorConfig{proc("cardinality", "", a), proc("cardinality", "other", b)}
		}, "", []string{"a:m.id"}},
		{"both instances", "g", func(a, b *tripRecorder) []*config.ProcessorConfig {
			pc := proc("cardinality", "g", a)
			pc.AfterAggregators = b
			return []*config.ProcessorConfig{pc}
		}, "", []string{"a:m.id", "b:m.id"}},
		{"no such processor", "nope", func(a, b *tripRecorder) []*config.ProcessorConfig {
			return []*config.ProcessorConfig{proc("cardinality", "g", a)}
		}, `cardinality_guard "nope" names no processor`, nil},
		{"two of that name", "cardinality", func(a, b *tripRecorder) []*config.ProcessorConfig {
			return []*config.ProcessorConfig{proc("cardinality", "", a), proc("cardinality", "", b)}
		}, "names two processors", nil},
		{"not a guard", "r", func(a, b *tripRecorder) []*config.ProcessorConfig {
			return []*config.ProcessorConfig{proc("rename", "r", &trailProcessor{})}
		}, "cannot act on a tag key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := &tripRecorder{}, &tripRecorder{}
			out := &reporterOutput{guard: tt.guard}
			outputs := []*config.OutputConfig{{Name: "influxdb", Plugin: out, Source: "out"},
				{Name: "other", Plugin: &reporterOutput{}, Source: "none"}}
			links, err := findGuards(tt.procs(a, b), outputs)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.ErrorContains(t, err, "outputs.influxdb (out)")
				return
			}
			require.NoError(t, err)
			require.Len(t, links, 1, "an output that names no guard is left alone")
			require.Nil(t, out.trip, "nothing changes before linkGuards")
			linkGuards(links)
			out.trip("m", "id")
			var got []string
			for _, s := range a.trips {
				got = append(got, "a:"+s)
			}
			for _, s := range b.trips {
				got = append(got, "b:"+s)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// NewAgent links an output to the guard it names, and refuses a config whose output names
// none.
func TestNewAgentLinksTheGuard(t *testing.T) {
	for _, guard := range []string{"g", "missing"} {
		t.Run(guard, func(t *testing.T) {
			cfg := config.DefaultConfig()
			rec := &tripRecorder{}
			cfg.AddProcessor("cardinality", rec).Common.Alias = "g"
			out := &reporterOutput{guard: guard}
			cfg.AddOutput("influxdb", out)
			_, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
			if guard == "missing" {
				require.ErrorContains(t, err, `cardinality_guard "missing" names no processor`)
				require.Nil(t, out.trip)
				return
			}
			require.NoError(t, err)
			out.trip("m", "id")
			require.Equal(t, []string{"m.id"}, rec.trips)
		})
	}
}

// clockReader is a processor that keeps the coarse clock the agent gives it.
type clockReader struct {
	now        func() time.Time
	resolution time.Duration
}

func (p *clockReader) Apply(in []morse.Metric) []morse.Metric { return in }
func (p *clockReader) SetCoarseClock(now func() time.Time, resolution time.Duration) {
	p.now, p.resolution = now, resolution
}

// TestAgentGivesProcessorsItsCoarseClock: a processor that takes a coarse clock gets one
// at NewAgent; it reads the last tick while the agent runs and the system's time otherwise.
// An agent whose processors take none does not run it, until a reload brings one that does.
func TestAgentGivesProcessorsItsCoarseClock(t *testing.T) {
	ticking := func(t *testing.T, read func() time.Time) bool {
		start := time.Now()
		time.Sleep(coarseTick * 3 / 2)
		now := read()
		switch {
		case start.Add(coarseTick).Equal(now):
			return true
		case time.Now().Equal(now):
			return false
		}
		t.Fatalf("the clock reads %s, neither the last tick's time nor the system's", now)
		return false
	}
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{}}
		cfg := loadTestConfig(t, ts.registry(t), agentBase+"[[outputs.sink]]\n")
		rec := &clockReader{}
		cfg.AddProcessor("clock", rec)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.Equal(t, coarseTick, rec.resolution)
		require.False(t, ticking(t, rec.now), "before Run: the system's time")

		stop := runAgent(t, a)
		synctest.Wait()
		require.True(t, ticking(t, rec.now), "running: the last tick's time")
		require.NoError(t, stop())
		require.False(t, ticking(t, rec.now), "after Run: the system's time again")
	})
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{}}
		reg := ts.registry(t)
		a, err := NewAgent(loadTestConfig(t, reg, agentBase+"[[outputs.sink]]\n"), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		synctest.Wait()
		require.False(t, ticking(t, a.clock.clock.Now), "no processor takes the clock: it does not run")

		cfg2 := loadTestConfig(t, reg, agentBase+"[[outputs.sink]]\n")
		rec := &clockReader{}
		cfg2.AddProcessor("clock", rec)
		require.NoError(t, a.Reload(context.Background(), cfg2))
		synctest.Wait()
		require.True(t, ticking(t, rec.now), "a reload brought a processor that takes it: it runs")
		require.NoError(t, stop())
	})
}
