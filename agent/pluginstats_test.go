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
	"github.com/morse-agent/morse/selfstat"
)

// countingInput adds per to its own counter at each gather.
type countingInput struct {
	per int64
	st  *selfstat.PluginStats
}

func (c *countingInput) SetStats(s *selfstat.PluginStats) { c.st = s }
func (c *countingInput) Gather(context.Context, morse.Accumulator) error {
	c.st.Counter("events").Add(c.per)
	return nil
}

// pluginSeries returns the events counted in each internal_counting series, in order.
func pluginSeries(t *testing.T, a *Agent) (events []int64) {
	for _, s := range a.stats.Snapshot() {
		if s.Measurement != "internal_counting" {
			continue
		}
		require.Len(t, s.Tags, 2)
		require.Equal(t, selfstat.IDTag, s.Tags[0].Key, "each instance has an _id, for per_instance")
		require.Equal(t, selfstat.Tag{Key: "input", Value: "counting"}, s.Tags[1], "equal tags otherwise, as Telegraf reports them")
		for _, f := range s.Fields {
			events = append(events, f.Value)
		}
	}
	return events
}

// TestPluginStatsArePerInstance: two instances of one plugin without an alias keep exact
// counts each, reported with equal tags, and a reload that removes one removes its series.
func TestPluginStatsArePerInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		build := func(pers ...int64) *config.Config {
			cfg := config.DefaultConfig()
			cfg.Agent.Interval = morse.Duration(time.Second)
			cfg.Agent.RoundInterval = false
			for _, per := range pers {
				cfg.AddInput("counting", &countingInput{per: per})
			}
			cfg.AddOutput("discard", &testutil.DiscardOutput{})
			return cfg
		}
		a, err := NewAgent(build(1, 10), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(2500 * time.Millisecond) // three gathers each: at start, 1 s and 2 s
		synctest.Wait()
		require.Equal(t, []int64{3, 30}, pluginSeries(t, a), "each instance counts its own")

		require.NoError(t, a.Reload(context.Background(), build(1)))
		synctest.Wait()
		require.Len(t, pluginSeries(t, a), 1, "the removed instance's series is gone")
		require.NoError(t, stop())
	})
}
