package agent

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/filter"
	"github.com/morse-agent/morse/internal/testutil"
)

// trailProcessor appends its mark to the metric's "trail" tag, so that a test sees which
// processors a metric passed, in which order.
type trailProcessor struct{ mark string }

func (p *trailProcessor) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		t, _ := m.Tag("trail")
		in[i] = m.WithTag("trail", t+p.mark)
	}
	return in
}

// countAggregator pushes, per period, one metric "count" with the number of metrics added
// and the trails they carried.
type countAggregator struct {
	mu     sync.Mutex
	n      int64
	trails string
}

func (a *countAggregator) Add(m morse.Metric) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	t, _ := m.Tag("trail")
	a.trails += t + ";"
}

func (a *countAggregator) Push(acc morse.Accumulator) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc.AddFields("count", map[string]any{"n": a.n, "trails": a.trails}, nil, time.Now())
}

func (a *countAggregator) Reset() { a.n, a.trails = 0, "" }

// stampInput adds one metric per gather, stamped with the time it gives.
type stampInput struct {
	name string
	at   func() time.Time
}

func (s *stampInput) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddMetric(morse.NewMetric(s.name, nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, s.at()))
	return nil
}

func processingConfig(t *testing.T) (*config.Config, *testutil.ScriptOutput) {
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname, cfg.Agent.RoundInterval = true, true
	cfg.Agent.FlushInterval = morse.Duration(time.Second)
	out := &testutil.ScriptOutput{}
	cfg.AddOutput("out", out)
	return cfg, out
}

func names(ms []morse.Metric) (out []string) {
	for _, m := range ms {
		t, _ := m.Tag("trail")
		out = append(out, m.Name()+":"+t)
	}
	return out
}

// TestProcessorsRunInOrderThenAggregatorsThenProcessorsAgain: Telegraf's order, with order
// sorting the processors and the config's order breaking ties, a filter that lets other
// metrics pass a processor unchanged, and skip_processors_after_aggregators.
func TestProcessorsRunInOrderThenAggregatorsThenProcessorsAgain(t *testing.T) {
	for _, skip := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			cfg, out := processingConfig(t)
			cfg.Agent.SkipProcessorsAfterAggregators = skip
			cfg.AddInput("in", &stampInput{name: "cpu", at: time.Now})
			cfg.AddInput("in", &stampInput{name: "mem", at: time.Now})
			cfg.AddProcessor("c", &trailProcessor{mark: "c"}).Common.Order = 2
			cfg.AddProcessor("a", &trailProcessor{mark: "a"}).Common.Order = 1
			cpuOnly, err := filter.New(filter.Config{NamePass: []string{"cpu"}})
			require.NoError(t, err)
			pb := cfg.AddProcessor("b", &trailProcessor{mark: "b"})
			pb.Common.Order, pb.Filter = 1, cpuOnly
			ag := cfg.AddAggregator("count", &countAggregator{})
			ag.Common.Period = morse.Duration(time.Minute)
			a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
			require.NoError(t, err)
			stop := runAgent(t, a)
			time.Sleep(time.Minute)
			require.NoError(t, stop())
			_, written := out.Snapshot()
			got := map[string]int{}
			for _, n := range names(written) {
				got[n]++
			}
			summary := "count:ac" // b selects cpu only
			if skip {
				summary = "count:"
			}
			require.Equal(t, 1, got[summary], "the aggregator's summary, then the processors again unless skipped: %v", got)
			require.Positive(t, got["cpu:abc"], "order 1 (a, then b by config order), then order 2")
			require.Positive(t, got["mem:ac"], "b's filter passes mem unchanged")
			require.Len(t, got, 3, "%v", got)
		})
	}
}

// TestAggregatorWindowsGraceAndDropOriginal: windows align to multiples of the period, a
// summary is pushed delay after a window ends, a window takes metrics stamped from grace
// before it starts until it is pushed, and drop_original keeps the originals from the
// outputs.
func TestAggregatorWindowsGraceAndDropOriginal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, out := processingConfig(t)
		cfg.Agent.Interval = morse.Duration(time.Second)
		start := time.Now() // synctest's epoch: a multiple of every period
		var mu sync.Mutex
		skew := time.Duration(0)
		cfg.AddInput("in", &stampInput{name: "m", at: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Now().Add(skew)
		}})
		ag := cfg.AddAggregator("count", &countAggregator{})
		ag.Common.Period = morse.Duration(10 * time.Second)
		ag.Common.Delay = morse.Duration(500 * time.Millisecond)
		ag.Common.Grace = morse.Duration(2 * time.Second)
		ag.Common.DropOriginal = true
		ag.Common.NameSuffix = "_10s"
		ag.Common.Tags = map[string]string{"agg": "count"}
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)

		time.Sleep(11*time.Second + 500*time.Millisecond) // past the first window and its delay
		calls, _ := out.Snapshot()
		require.NotEmpty(t, calls)
		_, written := out.Snapshot()
		require.Len(t, written, 1, "only the summary: drop_original keeps the originals back")
		sum := written[0]
		require.Equal(t, "count_10s", sum.Name())
		agg, _ := sum.Tag("agg")
		require.Equal(t, "count", agg)
		n, _ := sum.Field("n")
		require.Equal(t, int64(10), n.Int(), "gathers at 1s..10s: up to the push at 10.5s")
		require.Equal(t, start.Add(10500*time.Millisecond), sum.Time(), "pushed delay after the window ended")

		mu.Lock()
		skew = -11 * time.Second // stamps 11s old: within grace for a while, then not
		mu.Unlock()
		time.Sleep(10 * time.Second)
		require.NoError(t, stop())
		_, written = out.Snapshot()
		require.Len(t, written, 3, "the second window's summary and the last push at stop")
		n, _ = written[1].Field("n")
		// The window [10s, 20s), pushed at 20.5s, takes stamps from 8s (2s grace) to 20.5s.
		// The gather at 11s counts; those at 12s..21s are stamped 1s..10s, so only the
		// gathers at 19s and 20s (stamps 8s, 9s) count. The one at 21s, stamped 10s, is too
		// old for the next window.
		require.Equal(t, int64(3), n.Int())
		n, _ = written[2].Field("n")
		require.Zero(t, n.Int(), "the last push at stop")
	})
}
