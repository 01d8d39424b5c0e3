package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// connOutput behaves like a connection to a sink: a Write fails unless Connect came after
// the last Close. It records the order of Init, Connect and Close, and can hold its first
// Write until the test lets it go.
type connOutput struct {
	testutil.ScriptOutput

	mu        sync.Mutex
	events    []string
	connected bool
	holdFirst chan struct{} // when set, the first Write waits for it to close
	inFirst   chan struct{} // closed when the first Write has begun
	writes    int
}

func (o *connOutput) event(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
	switch e {
	case "connect":
		o.connected = true
	case "close":
		o.connected = false
	}
}

func (o *connOutput) Init() error                   { o.event("init"); return nil }
func (o *connOutput) Connect(context.Context) error { o.event("connect"); return nil }
func (o *connOutput) Close() error                  { o.event("close"); return nil }

func (o *connOutput) Write(ctx context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	o.writes++
	first := o.writes == 1 && o.holdFirst != nil
	o.mu.Unlock()
	if first {
		close(o.inFirst)
		<-o.holdFirst
	}
	o.mu.Lock()
	connected := o.connected
	o.mu.Unlock()
	if !connected {
		return errors.New("write on a closed connection")
	}
	return o.ScriptOutput.Write(ctx, batch)
}

func (o *connOutput) Events() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

// initInput counts its Init calls and gathers seqInput's numbered metrics.
type initInput struct {
	seqInput
	inits int
}

func (i *initInput) Init() error { i.inits++; return nil }

// codeConfig is an agent config built in code, as a program that embeds the agent builds it.
func codeConfig(in morse.Input, out morse.Output) (*config.Config, *config.InputConfig, *config.OutputConfig) {
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.RoundInterval = false
	return cfg, cfg.AddInput("seq", in), cfg.AddOutput("conn", out)
}

// startAgent runs a in the background and returns a stop function that ends it and returns
// Run's error. A test that fails stops it too, so that its bubble ends.
func startAgent(t *testing.T, a *Agent) (stop func() error) {
	stop = sync.OnceValue(runAgent(t, a))
	t.Cleanup(func() { _ = stop() })
	return stop
}

// TestCodeBuiltIntervalTakesEffect: an input's Common.Interval set in code decides how often
// it gathers: 100 ms gathers 25 times in 2.5 s, not once per [agent] interval.
func TestCodeBuiltIntervalTakesEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &seqInput{Count: 1, Name: "seq"}
		cfg, ic, _ := codeConfig(in, &testutil.ScriptOutput{})
		ic.Common.Interval = morse.Duration(100 * time.Millisecond)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2450*time.Millisecond)
		defer cancel()
		require.NoError(t, a.Run(ctx))
		require.Equal(t, 25, in.n, "a gather at once, then every 100 ms up to 2.4 s")
	})
}

// TestCodeBuiltOutputSettingsTakeEffect: an output's metric_batch_size, metric_buffer_limit
// and flush_interval set in its Common options decide how it batches, buffers and flushes.
func TestCodeBuiltOutputSettingsTakeEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &seqInput{Count: 20, Name: "seq"}
		down := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("sink down") }}
		cfg, ic, small := codeConfig(in, down)
		ic.Common.Interval = morse.Duration(time.Hour) // one gather, at once
		small.Common.MetricBatchSize, small.Common.MetricBufferLimit = 4, 8
		timed := &testutil.ScriptOutput{}
		cfg.AddOutput("timed", timed).Common.FlushInterval = morse.Duration(300 * time.Millisecond)
		cfg.Agent.ShutdownTimeout = morse.Duration(time.Second)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := startAgent(t, a)
		<-a.Ready()
		time.Sleep(time.Second)
		_, written := timed.Snapshot()
		require.Len(t, written, 20, "flushed after flush_interval, not the [agent] 10 s")
		st := a.Outputs()[0].Stats
		require.GreaterOrEqual(t, st.Dropped, int64(8), "20 metrics into a buffer of 8 and a batch of 4 in flight")
		require.Equal(t, 4, down.BatchSizes()[0], "batches of metric_batch_size")
		require.Error(t, stop(), "what the sink never took is reported unsent")
	})
}

// TestCodeBuiltConfigIsValidated: a code-built config meets the rules of a file, and a
// problem names the field's path.
func TestCodeBuiltConfigIsValidated(t *testing.T) {
	cfg, ic, oc := codeConfig(&seqInput{}, &testutil.ScriptOutput{})
	ic.Common.Interval = morse.Duration(-time.Second)
	oc.Common.MetricBatchSize, oc.Common.MetricBufferLimit = 100, 10
	_, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
	require.ErrorContains(t, err, "inputs[0].interval: must not be negative, got -1s")
	require.ErrorContains(t, err, "outputs[0].metric_buffer_limit: 10 must be at least metric_batch_size (100)")

	cfg, _, _ = codeConfig(&seqInput{}, &testutil.ScriptOutput{})
	cfg.Outputs = append(cfg.Outputs, cfg.Outputs[0])
	_, err = NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
	require.ErrorContains(t, err, "outputs[1]: is the same plugin instance as outputs[0]")
}

// TestCodeBuiltAggregatorIsValidated: a code-built aggregator's window meets the rules of a
// file, and a processor or aggregator instance is refused when nil or used twice, each
// problem naming the field's path.
func TestCodeBuiltAggregatorIsValidated(t *testing.T) {
	cfg, _, _ := codeConfig(&seqInput{}, &testutil.ScriptOutput{})
	ac := cfg.AddAggregator("count", &countAggregator{})
	ac.Common.Period, ac.Common.Grace = 0, morse.Duration(-time.Second)
	p := &trailProcessor{mark: "a"}
	cfg.AddProcessor("trail", p)
	cfg.AddProcessor("trail", p)
	cfg.AddAggregator("count", nil)
	_, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
	require.ErrorContains(t, err, "code: aggregators[0].period: must be positive, got 0s")
	require.ErrorContains(t, err, "code: aggregators[0].grace: must not be negative, got -1s")
	require.ErrorContains(t, err, "code: aggregators[1]: the plugin is nil")
	require.ErrorContains(t, err, "code: processors[1]: is the same plugin instance as processors[0]")
}

// TestCodeBuiltProcessorFilterTakesEffect: a processor's and an aggregator's Common.Filter
// set in code select what they take, as a file's namepass does: the processor marks cpu
// only, and the aggregator counts mem only.
func TestCodeBuiltProcessorFilterTakesEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, out := processingConfig(t)
		cfg.Agent.Interval = morse.Duration(time.Second)
		cfg.AddInput("in", &stampInput{name: "cpu", at: time.Now})
		cfg.AddInput("in", &stampInput{name: "mem", at: time.Now})
		cfg.AddProcessor("a", &trailProcessor{mark: "a"}).Common.Filter.NamePass = []string{"cpu"}
		ac := cfg.AddAggregator("count", &countAggregator{})
		ac.Common.Period, ac.Common.Filter.NamePass = morse.Duration(time.Minute), []string{"mem"}
		cfg.Agent.SkipProcessorsAfterAggregators = true
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute+500*time.Millisecond)
		defer cancel()
		require.NoError(t, a.Run(ctx))
		_, written := out.Snapshot()
		got := map[string]int{}
		var counted int64
		for _, m := range written {
			got[names([]morse.Metric{m})[0]]++
			if m.Name() == "count" && counted == 0 {
				v, _ := m.Field("n")
				counted = v.Int()
			}
		}
		require.Equal(t, map[string]int{"cpu:a": 60, "mem:": 60, "count:": 2}, got,
			"a gather each whole second from 1 s to 60 s; a summary at 60.1 s and one at shutdown")
		require.Equal(t, int64(60), counted, "the aggregator took mem only, up to its push at 60.1 s")
	})
}

// TestReloadKeepsUnchangedCodeBuiltPlugins: a reload with a config built anew in code, with
// the same instances and settings, keeps the running input and output: no second Init or
// Connect, and the metrics the output buffered while its sink was down are written after.
func TestReloadKeepsUnchangedCodeBuiltPlugins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &initInput{seqInput: seqInput{Count: 1, Name: "seq"}}
		var mu sync.Mutex
		down := true
		out := &connOutput{}
		out.Answer = func(int, []morse.Metric) error {
			mu.Lock()
			defer mu.Unlock()
			if down {
				return errors.New("sink down")
			}
			return nil
		}
		build := func() *config.Config {
			cfg, ic, oc := codeConfig(in, out)
			ic.Common.Interval = morse.Duration(time.Second)
			oc.Common.FlushInterval = morse.Duration(time.Second)
			return cfg
		}
		a, err := NewAgent(build(), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := startAgent(t, a)
		<-a.Ready()
		time.Sleep(2500 * time.Millisecond) // three gathers, held in the buffer
		require.NoError(t, a.Reload(context.Background(), build()))
		mu.Lock()
		down = false
		mu.Unlock()
		time.Sleep(time.Minute) // past the backoff
		require.NoError(t, stop())
		require.Equal(t, 1, in.inits)
		require.Equal(t, []string{"init", "connect", "close"}, out.Events())
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, in.n), testutil.Seqs(written), "nothing lost, nothing twice")
	})
}

// TestReloadSameOutputInstanceNewSettings: a reload that passes the running output's
// instance again with another flush_interval hands the instance over: the old writer
// writes its last batch and closes it before the new one connects, Init is not called
// again, and nothing is lost. The old writer's last write is held until the new writer
// has had every chance to connect.
func TestReloadSameOutputInstanceNewSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &initInput{seqInput: seqInput{Count: 3, Name: "seq"}}
		out := &connOutput{holdFirst: make(chan struct{}), inFirst: make(chan struct{})}
		build := func(flush time.Duration) *config.Config {
			cfg, _, oc := codeConfig(in, out)
			cfg.Agent.Interval, cfg.Agent.FlushInterval = morse.Duration(time.Second), morse.Duration(time.Second)
			cfg.Agent.MetricBatchSize = 2 // a flush at every gather
			oc.Common.FlushInterval = morse.Duration(flush)
			return cfg
		}
		a, err := NewAgent(build(time.Second), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := startAgent(t, a)
		<-out.inFirst // the old writer is writing its first batch
		require.NoError(t, a.Reload(context.Background(), build(500*time.Millisecond)))
		time.Sleep(3 * time.Second) // the new writer gathers batches and flushes
		synctest.Wait()
		close(out.holdFirst)
		time.Sleep(3 * time.Second)
		require.NoError(t, stop(), "nothing left unsent")
		require.Equal(t, 1, in.inits)
		require.Equal(t, []string{"init", "connect", "close", "connect", "close"}, out.Events())
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, in.n), sortedSeqs(written), "nothing lost, nothing twice")
	})
}

// TestReloadSameInputInstanceNewInterval: a reload that passes the running input's
// instance again with another interval restarts its gather loop at the new pace without
// calling Init again.
func TestReloadSameInputInstanceNewInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &initInput{seqInput: seqInput{Count: 1, Name: "seq"}}
		build := func(every time.Duration) *config.Config {
			cfg, ic, _ := codeConfig(in, &testutil.ScriptOutput{})
			ic.Common.Interval = morse.Duration(every)
			return cfg
		}
		a, err := NewAgent(build(time.Second), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := startAgent(t, a)
		<-a.Ready()
		time.Sleep(2500 * time.Millisecond) // gathers at 0, 1 and 2 s
		require.NoError(t, a.Reload(context.Background(), build(100*time.Millisecond)))
		time.Sleep(950 * time.Millisecond) // at once, then every 100 ms
		require.NoError(t, stop())
		require.Equal(t, 1, in.inits)
		require.Equal(t, 3+10, in.n)
	})
}

// TestReloadNewOutputInstanceReplacesOld: a new instance with equal settings replaces the
// old one: the old writer flushes and closes its instance, the new one connects its own,
// and every metric reaches one of them.
func TestReloadNewOutputInstanceReplacesOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &seqInput{Count: 1, Name: "seq"}
		build := func(out *connOutput) *config.Config {
			cfg, ic, oc := codeConfig(in, out)
			ic.Common.Interval = morse.Duration(time.Second)
			oc.Common.FlushInterval = morse.Duration(10 * time.Second)
			return cfg
		}
		old, next := &connOutput{}, &connOutput{}
		a, err := NewAgent(build(old), AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := startAgent(t, a)
		<-a.Ready()
		time.Sleep(2500 * time.Millisecond)
		require.NoError(t, a.Reload(context.Background(), build(next)))
		time.Sleep(2 * time.Second)
		require.NoError(t, stop())
		require.Equal(t, []string{"init", "connect", "close"}, old.Events())
		require.Equal(t, []string{"init", "connect", "close"}, next.Events())
		_, before := old.Snapshot()
		_, after := next.Snapshot()
		require.Equal(t, testutil.SeqRange(0, in.n), sortedSeqs(append(before, after...)))
	})
}

// sortedSeqs returns the sequence numbers of ms in ascending order.
func sortedSeqs(ms []morse.Metric) []int {
	seqs := testutil.Seqs(ms)
	slices.Sort(seqs)
	return seqs
}
