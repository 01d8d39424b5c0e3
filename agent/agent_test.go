package agent

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// seqInput emits Count metrics per gather, numbered on from the last gather.
type seqInput struct {
	Count int    `toml:"count"`
	Name  string `toml:"measurement"`
	mu    sync.Mutex
	n     int
}

func (s *seqInput) Gather(_ context.Context, acc morse.Accumulator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range s.Count {
		acc.AddMetric(morse.NewMetric(s.Name, []morse.Tag{{Key: "src", Value: "seq"}}, []morse.Field{{Key: "v", Value: morse.Int(int64(s.n))}}, time.Now()))
		s.n++
	}
	return nil
}

// sinkOutput is a test output that the test finds again by its sink name, even when a
// reload built the config anew.
type sinkOutput struct {
	Sink string `toml:"sink"`
	Tag  string `toml:"tag"` // changing it changes the fingerprint
	testutil.ScriptOutput
}

// testSinks records the sinkOutput instances of one test by name.
type testSinks struct {
	mu    sync.Mutex
	sinks map[string][]*sinkOutput
	down  map[string]bool
}

func (ts *testSinks) registry(t *testing.T) *morse.Registry {
	reg := morse.NewRegistry()
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "seq", Description: "numbers", New: func() morse.Input { return &seqInput{Count: 1, Name: "seq"} }}))
	require.NoError(t, reg.AddOutput(morse.OutputInfo{Name: "sink", Description: "memory", New: func() morse.Output {
		o := &sinkOutput{}
		o.Answer = func(int, []morse.Metric) error {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			if ts.down[o.Sink] {
				return errors.New("connection refused")
			}
			return nil
		}
		return o
	}}))
	return reg
}

func (ts *testSinks) setDown(name string, down bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.down[name] = down
}

func loadTestConfig(t *testing.T, reg *morse.Registry, text string) *config.Config {
	t.Helper()
	cfg, err := config.Load(config.Options{Registry: reg, Sources: []config.Source{{Name: "test.conf", Data: []byte(text)}}})
	require.NoError(t, err)
	return cfg
}

func outputOf(cfg *config.Config, i int) *sinkOutput { return cfg.Outputs[i].Plugin.(*sinkOutput) }

// runAgent runs a in the background and returns a stop function that ends it and returns
// Run's error.
func runAgent(t *testing.T, a *Agent) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	return func() error { cancel(); return <-errc }
}

const agentBase = `
[global_tags]
  dc = "eu"
[agent]
  interval = "1s"
  round_interval = false
  flush_interval = "1s"
  hostname = "h1"
  shutdown_timeout = "5s"
`

func TestAgentAppliesTagsAndNamesAndFansOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{}}
		cfg := loadTestConfig(t, ts.registry(t), agentBase+`
[[inputs.seq]]
  count = 2
  name_prefix = "p_"
  [inputs.seq.tags]
    src = "ignored: the metric has its own"
    role = "db"
[[outputs.sink]]
  sink = "a"
[[outputs.sink]]
  sink = "b"
  namedrop = ["p_*"]
`)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(2500 * time.Millisecond)
		require.NoError(t, stop())
		_, written := outputOf(cfg, 0).Snapshot()
		require.Len(t, written, 6, "three gathers of two metrics")
		m := written[0]
		require.Equal(t, "p_seq", m.Name())
		require.Equal(t, []morse.Tag{{Key: "dc", Value: "eu"}, {Key: "host", Value: "h1"}, {Key: "role", Value: "db"}, {Key: "src", Value: "seq"}}, m.Tags())
		_, filtered := outputOf(cfg, 1).Snapshot()
		require.Empty(t, filtered)
		st := a.Outputs()
		require.Len(t, st, 2, "counters stay readable after the agent stopped")
		require.Equal(t, int64(6), st[0].Stats.Written)
		require.Equal(t, int64(6), st[1].Stats.Filtered, "namedrop counts as filtered, not dropped")
		require.Zero(t, st[1].Stats.Dropped)
	})
}

func TestAgentSlowOutputDelaysNeitherGatheringNorOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{"down": true}}
		cfg := loadTestConfig(t, ts.registry(t), agentBase+`
[[inputs.seq]]
[[outputs.sink]]
  sink = "down"
  flush_interval = "700ms" # never at the same instant as a gather: the order would be arbitrary
[[outputs.sink]]
  sink = "up"
  flush_interval = "700ms"
`)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(30*time.Second + 500*time.Millisecond)
		synctest.Wait()
		_, up := outputOf(cfg, 1).Snapshot()
		require.Equal(t, testutil.SeqRange(0, 31), testutil.Seqs(up), "the healthy output got every gather on time")
		downCalls, _ := outputOf(cfg, 0).Snapshot()
		// Every flush would be 43 calls. The backoff's full jitter draws each delay from
		// [0, ceiling]; a run of short draws took 10 calls once, so the bound leaves room for
		// that luck and still tells backing off from retrying every flush.
		require.Less(t, len(downCalls), 20, "the failing output backs off instead of retrying every flush")
		downStats := a.Outputs()[0].Stats
		require.Equal(t, 31, downStats.BufferSize, "the failing output holds everything")
		require.Zero(t, downStats.Written)
		ts.setDown("down", false)
		time.Sleep(time.Minute)
		require.NoError(t, stop())
		_, down := outputOf(cfg, 0).Snapshot()
		require.Equal(t, testutil.Seqs(up)[:31], testutil.Seqs(down)[:31], "after recovery it delivers in order")
	})
}

func TestAgentReloadKeepsBufferOfUnchangedOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{"keep": true}}
		reg := ts.registry(t)
		text := func(tag string) string {
			return agentBase + `
[[inputs.seq]]
[[outputs.sink]]
  sink = "keep"
[[outputs.sink]]
  sink = "change"
  tag = "` + tag + `"
`
		}
		cfg1 := loadTestConfig(t, reg, text("one"))
		a, err := NewAgent(cfg1, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(9*time.Second + 500*time.Millisecond) // 10 gathers held by "keep", which is down
		synctest.Wait()
		cfg2 := loadTestConfig(t, reg, text("two"))
		require.Equal(t, cfg1.Outputs[0].Fingerprint, cfg2.Outputs[0].Fingerprint)
		require.NotEqual(t, cfg1.Outputs[1].Fingerprint, cfg2.Outputs[1].Fingerprint)
		require.NoError(t, a.Reload(context.Background(), cfg2))

		ts.setDown("keep", false)
		time.Sleep(2 * time.Minute)
		require.NoError(t, stop())
		_, kept := outputOf(cfg1, 0).Snapshot()
		calls, _ := outputOf(cfg2, 0).Snapshot()
		require.Empty(t, calls, "the unchanged output was not rebuilt")
		got := testutil.Seqs(kept)
		require.Equal(t, testutil.SeqRange(0, len(got)), got, "nothing lost and nothing doubled across the reload")
		require.Greater(t, len(got), 100)
		_, replaced := outputOf(cfg2, 1).Snapshot()
		require.NotEmpty(t, replaced, "the changed output was rebuilt and receives metrics")
		require.True(t, outputOf(cfg1, 1).Closed(), "the replaced output was flushed and closed")
	})
}

// failingInit is an output whose Init fails, to prove a bad reload changes nothing.
type failingInit struct{ testutil.ScriptOutput }

func (f *failingInit) Init() error { return errors.New("no such certificate") }

func TestAgentRefusesReloadThatCannotStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{}}
		reg := ts.registry(t)
		require.NoError(t, reg.AddOutput(morse.OutputInfo{Name: "bad", Description: "fails", New: func() morse.Output { return &failingInit{} }}))
		cfg1 := loadTestConfig(t, reg, agentBase+"[[inputs.seq]]\n[[outputs.sink]]\n  sink = \"a\"\n")
		a, err := NewAgent(cfg1, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(1500 * time.Millisecond)
		cfg2 := loadTestConfig(t, reg, agentBase+"[[inputs.seq]]\n[[outputs.bad]]\n")
		require.ErrorContains(t, a.Reload(context.Background(), cfg2), "no such certificate")
		time.Sleep(3 * time.Second)
		require.NoError(t, stop())
		_, written := outputOf(cfg1, 0).Snapshot()
		require.Equal(t, testutil.SeqRange(0, 5), testutil.Seqs(written), "the old config kept running")
	})
}

func TestAgentShutdownReportsUnsentPerOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{"dead": true}}
		cfg := loadTestConfig(t, ts.registry(t), agentBase+`
[[inputs.seq]]
  count = 3
[[outputs.sink]]
  sink = "dead"
`)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(1500 * time.Millisecond)
		start := time.Now()
		err = stop()
		var unsent *batch.UnsentError
		require.ErrorAs(t, err, &unsent)
		require.Equal(t, "sink", unsent.Output)
		require.Equal(t, 6, unsent.Left)
		require.Equal(t, 5*time.Second, time.Since(start), "shutdown_timeout bounds the final flush")
	})
}

// TestAgentOnDropReportsEveryOutputsLosses: the agent's drop hook hears every loss of every
// output, by output name or alias, and its counts add up to each output's metrics_dropped.
func TestAgentOnDropReportsEveryOutputsLosses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{"dead": true}}
		cfg := loadTestConfig(t, ts.registry(t), agentBase+`
[[inputs.seq]]
  count = 4
[[outputs.sink]]
  sink = "dead"
  alias = "small"
  metric_buffer_limit = 5
  metric_batch_size = 5
[[outputs.sink]]
  sink = "live"
`)
		var mu sync.Mutex
		lost := map[string]map[string]int{}
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger(), OnDrop: func(ev batch.DropEvent) {
			mu.Lock()
			defer mu.Unlock()
			if lost[ev.Output] == nil {
				lost[ev.Output] = map[string]int{}
			}
			lost[ev.Output][ev.Reason] += ev.Count
		}})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(3500 * time.Millisecond) // four gathers of 4 into a buffer of 5
		outs := a.Outputs()
		var unsent *batch.UnsentError
		require.ErrorAs(t, stop(), &unsent)

		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, map[string]map[string]int{"small": {morse.ReasonBufferFull: 11, morse.ReasonShutdown: 5}}, lost)
		for _, o := range a.Outputs() {
			var sum int64
			for _, n := range lost[cmp.Or(o.Alias, o.Name)] {
				sum += int64(n)
			}
			require.Equal(t, o.Stats.Dropped, sum, "output %s", o.Name)
		}
		require.Len(t, outs, 2)
	})
}

func TestAgentOnceGathersFlushesAndReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{}}
		cfg := loadTestConfig(t, ts.registry(t), agentBase+"[[inputs.seq]]\n  count = 4\n[[outputs.sink]]\n  sink = \"a\"\n")
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, a.Once(context.Background()))
		_, written := outputOf(cfg, 0).Snapshot()
		require.Equal(t, testutil.SeqRange(0, 4), testutil.Seqs(written))

		ts.setDown("b", true)
		cfg2 := loadTestConfig(t, ts.registry(t), agentBase+"[[inputs.seq]]\n[[outputs.sink]]\n  sink = \"b\"\n")
		a2, err := NewAgent(cfg2, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		var unsent *batch.UnsentError
		require.ErrorAs(t, a2.Once(context.Background()), &unsent)
		require.Equal(t, 1, unsent.Left)
	})
}

func TestAgentInCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.Agent.OmitHostname = true
		cfg.AddInput("seq", &seqInput{Count: 1, Name: "x"})
		out := &testutil.ScriptOutput{}
		cfg.AddOutput("mem", out)
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		var got []morse.Metric
		require.NoError(t, a.Test(context.Background(), func(m morse.Metric) { got = append(got, m) }))
		require.Len(t, got, 1)
		require.Empty(t, got[0].Tags()[1:], "omit_hostname leaves the host tag out")
		require.NoError(t, a.Once(context.Background()))
		_, written := out.Snapshot()
		require.Len(t, written, 1)
	})
}

// flakyInput fails every gather after adding one metric, like a collector whose source is
// half broken.
type flakyInput struct{ seqInput }

func (f *flakyInput) Gather(ctx context.Context, acc morse.Accumulator) error {
	_ = f.seqInput.Gather(ctx, acc)
	acc.AddError(errors.New("reading /proc/thing: permission denied"))
	return errors.New("gather failed")
}

// countingHandler counts log records at error level.
type countingHandler struct {
	mu     sync.Mutex
	errors int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		h.errors++
		h.mu.Unlock()
	}
	return nil
}

func TestAgentCountsGatherErrorsThrottlesTheLogAndKeepsRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.Agent.Interval = morse.Duration(time.Second)
		cfg.Agent.RoundInterval = false
		cfg.Agent.FlushInterval = morse.Duration(time.Second)
		cfg.AddInput("flaky", &flakyInput{seqInput{Count: 1, Name: "f"}})
		out := &testutil.ScriptOutput{}
		cfg.AddOutput("mem", out)
		logs := &countingHandler{}
		a, err := NewAgent(cfg, AgentOptions{Logger: slog.New(logs)})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(59*time.Second + 500*time.Millisecond) // 60 gathers, two errors each
		require.NoError(t, stop())

		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, 60), testutil.Seqs(written), "the agent kept gathering and writing")
		var loggedErrors, failedGathers, agentErrors int64
		for _, s := range a.stats.Snapshot() {
			for _, f := range s.Fields {
				switch {
				case s.Measurement == "internal_gather" && f.Key == "errors":
					loggedErrors = f.Value
				case s.Measurement == "internal_gather" && f.Key == "gather_errors":
					failedGathers = f.Value
				case s.Measurement == "internal_agent" && f.Key == "gather_errors":
					agentErrors = f.Value
				}
			}
		}
		// Telegraf's meanings: errors counts every error the input reported, gather_errors
		// the gathers that failed, here and summed in internal_agent.
		require.Equal(t, int64(120), loggedErrors, "every error is counted in internal_gather")
		require.Equal(t, int64(60), failedGathers, "every failed gather")
		require.Equal(t, int64(60), agentErrors, "and in internal_agent")
		logs.mu.Lock()
		defer logs.mu.Unlock()
		require.Equal(t, 2, logs.errors, "120 errors in 60 s log twice: once per 30 s")
	})
}
