package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// TestInputCollectionJitter: an input's collection_jitter replaces the agent's, and "0s"
// turns the agent's off for that input alone.
func TestInputCollectionJitter(t *testing.T) {
	s := time.Second
	zero := morse.Duration(0)
	three := morse.Duration(3 * s)
	for _, tt := range []struct {
		name        string
		agentJitter time.Duration
		input       *morse.Duration
		maxLate     time.Duration // every gather runs in [mark, mark+maxLate]
	}{
		{name: "the input turns the agent's off", agentJitter: 8 * s, input: &zero, maxLate: 0},
		{name: "the input's own", input: &three, maxLate: 3 * s},
		{name: "the agent's", agentJitter: 2 * s, maxLate: 2 * s},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := &clockInput{start: time.Now()}
				cfg := config.DefaultConfig()
				cfg.Agent.CollectionJitter = morse.Duration(tt.agentJitter)
				cfg.AddInput("clock", in).Common.CollectionJitter = tt.input
				cfg.AddOutput("discard", &testutil.DiscardOutput{})
				a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				stop := runAgent(t, a)
				time.Sleep(49 * s)
				synctest.Wait()
				require.NoError(t, stop())
				in.mu.Lock()
				defer in.mu.Unlock()
				require.Len(t, in.at, 4)
				for i, at := range in.at {
					mark := time.Duration(i+1) * 10 * s
					require.GreaterOrEqual(t, at, mark)
					require.LessOrEqual(t, at, mark+tt.maxLate)
				}
			})
		})
	}
}

// TestInputPrecision: an input's precision replaces [agent]'s and the interval's, and, as in
// Telegraf, applies to what a service input adds on its own too.
func TestInputPrecision(t *testing.T) {
	cfg := config.DefaultConfig()
	ic := &config.InputConfig{}
	ic.Common.Precision = morse.Duration(time.Millisecond)
	ri := &runningInput{cfg: ic, agent: &Agent{cfg: cfg}}
	st := &agentState{precision: time.Second}
	require.Equal(t, time.Millisecond, ri.outputAccumulator().precision(st))
	require.Equal(t, time.Millisecond, ri.outputAccumulator().forService().precision(st))
}

// slowInput adds one metric with its own time, then takes two seconds to finish.
type slowInput struct{ own time.Time }

// Gather sleeps in the fake time of the synctest bubbles that use it.
func (in *slowInput) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("slow", map[string]any{"v": 1}, nil, in.own)
	time.Sleep(2 * time.Second)
	return nil
}

// TestTimeSource: time_source gives every metric of a gather the gather's start or end, not
// rounded, as Telegraf sets it after the precision; "metric" keeps the metric's own time.
func TestTimeSource(t *testing.T) {
	own := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	for _, tt := range []struct {
		source config.TimeSource
		want   func(start time.Time) time.Time
	}{
		{"", func(time.Time) time.Time { return own.Round(time.Second) }},
		{config.TimeMetric, func(time.Time) time.Time { return own.Round(time.Second) }},
		{config.TimeCollectionStart, func(start time.Time) time.Time { return start }},
		{config.TimeCollectionEnd, func(start time.Time) time.Time { return start.Add(2 * time.Second) }},
	} {
		t.Run(string(tt.source), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(1234567 * time.Nanosecond) // a start that rounding would change
				cfg := config.DefaultConfig()
				cfg.AddInput("slow", &slowInput{own: own}).Common.TimeSource = tt.source
				a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				start := time.Now()
				var got []morse.Metric
				require.NoError(t, a.Test(context.Background(), func(m morse.Metric) { got = append(got, m) }))
				require.Len(t, got, 1)
				require.Equal(t, tt.want(start), got[0].Time())
			})
		})
	}
}

// flakyService fails its first `fails` starts, then runs and adds a metric per gather.
type flakyService struct {
	fails int
	mu    sync.Mutex
	tries int
}

func (f *flakyService) Start(context.Context, morse.Accumulator) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.tries <= f.fails {
		return errors.New("port in use")
	}
	return nil
}

func (f *flakyService) Stop() {}

func (f *flakyService) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("flaky", map[string]any{"v": 1}, nil)
	return nil
}

// TestStartupErrorBehavior: "error" stops the agent from starting, "ignore" and "probe"
// leave the input out and run the rest, "retry" starts it before each gather until it runs.
// Every failed start is counted.
func TestStartupErrorBehavior(t *testing.T) {
	for _, tt := range []struct {
		behavior    config.StartupErrorBehavior
		startErr    bool
		tries       int
		flakyWrites int // the flaky input's metrics, of 3 gathers
	}{
		{behavior: "", startErr: true, tries: 1},
		{behavior: config.StartupError, startErr: true, tries: 1},
		{behavior: config.StartupIgnore, tries: 1},
		{behavior: config.StartupProbe, tries: 1},
		{behavior: config.StartupRetry, tries: 3, flakyWrites: 2}, // fails at start and the first gather
	} {
		t.Run(string(tt.behavior), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				flaky := &flakyService{fails: 2}
				cfg := config.DefaultConfig()
				cfg.Agent.OmitHostname = true
				cfg.AddInput("flaky", flaky).Common.StartupErrorBehavior = tt.behavior
				cfg.AddInput("clock", &clockInput{start: time.Now()})
				out := &testutil.ScriptOutput{}
				cfg.AddOutput("script", out)
				a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				if tt.startErr {
					err := a.Run(context.Background())
					require.ErrorContains(t, err, "inputs.flaky")
					require.ErrorContains(t, err, "port in use")
					require.Equal(t, tt.tries, flaky.tries)
					return
				}
				stop := runAgent(t, a)
				time.Sleep(35 * time.Second)
				synctest.Wait()
				require.NoError(t, stop())
				require.Equal(t, tt.tries, flaky.tries)
				_, written := out.Snapshot()
				n := 0
				for _, m := range written {
					if m.Name() == "flaky" {
						n++
					}
				}
				require.Equal(t, tt.flakyWrites, n)
				require.Equal(t, int64(tt.tries-tt.flakyWrites/2), startupErrors(a, "flaky"))
			})
		})
	}
}

// startupErrors reads internal_gather's startup_errors of one input.
func startupErrors(a *Agent, input string) int64 {
	for _, s := range a.stats.Snapshot() {
		if s.Measurement != "internal_gather" || !slices.Contains(s.Tags, selfstat.Tag{Key: "input", Value: input}) {
			continue
		}
		for _, f := range s.Fields {
			if f.Key == "startup_errors" {
				return f.Value
			}
		}
	}
	return -1
}

// TestOutputRename: an output's name_override, name_prefix and name_suffix rename what it
// writes, after its filter, and leave the names the other outputs see alone; a line metric
// is renamed too.
func TestOutputRename(t *testing.T) {
	lines, plain, _ := gatherIntoTwoOutputs(t, &lineInput{}, func(cfg *config.Config) {
		cfg.Outputs[0].Common.Rename = config.Rename{NameOverride: "n", NamePrefix: "p_", NameSuffix: "_s"}
	})
	require.Len(t, lines, 1)
	require.Equal(t, "p_n_s", lines[0].Name())
	require.Len(t, plain, 1)
	require.Equal(t, "m", plain[0].Name())
	require.Equal(t, plain[0].Tags(), lines[0].Tags())
	require.Equal(t, plain[0].Fields(), lines[0].Fields())
}

// TestPluginLogLevel: a plugin's log_level replaces the agent's for its messages alone, in
// either direction.
func TestPluginLogLevel(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	pluginLogger(base, "inputs", "chatty", "", "debug").Debug("shown")
	pluginLogger(base, "inputs", "chatty", "", "trace").Log(context.Background(), config.LevelTrace, "traced")
	pluginLogger(base, "inputs", "quiet", "", "error").Warn("hidden")
	pluginLogger(base, "inputs", "plain", "", "").Debug("hidden too")
	pluginLogger(base, "inputs", "plain", "a", "").Info("kept")
	out := buf.String()
	require.Contains(t, out, `msg=shown plugin=inputs.chatty`)
	require.Contains(t, out, `msg=traced plugin=inputs.chatty`)
	require.Contains(t, out, `msg=kept plugin=inputs.plain alias=a`)
	require.NotContains(t, out, "hidden")
}

// burstInput adds from several goroutines at once, as inputs.exec does per command.
type burstInput struct{}

// Gather sleeps in the fake time of the synctest bubble that uses it.
func (burstInput) Gather(_ context.Context, acc morse.Accumulator) error {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				acc.AddFields("burst", map[string]any{"g": g, "i": i}, nil)
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Second)
	return nil
}

// TestCollectionEndFromManyGoroutines: metrics held for time_source = "collection_end" may be
// added at once from several goroutines; every one arrives, with the gather's end.
func TestCollectionEndFromManyGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.AddInput("burst", burstInput{}).Common.TimeSource = config.TimeCollectionEnd
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		end := time.Now().Add(time.Second)
		var got []morse.Metric
		require.NoError(t, a.Test(context.Background(), func(m morse.Metric) { got = append(got, m) }))
		require.Len(t, got, 800)
		for _, m := range got {
			require.Equal(t, end, m.Time())
		}
	})
}

// TestStartupErrorBehaviorUnderTest: --test and --once honour startup_error_behavior: an
// input left out does not fail the run, and the other inputs still gather.
func TestStartupErrorBehaviorUnderTest(t *testing.T) {
	for _, b := range []config.StartupErrorBehavior{config.StartupIgnore, config.StartupRetry, config.StartupError} {
		t.Run(string(b), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := config.DefaultConfig()
				cfg.AddInput("flaky", &flakyService{fails: 1}).Common.StartupErrorBehavior = b
				cfg.AddInput("slow", &slowInput{own: time.Unix(1, 0)})
				a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
				require.NoError(t, err)
				var names []string
				err = a.Test(context.Background(), func(m morse.Metric) { names = append(names, m.Name()) })
				require.Equal(t, []string{"slow"}, names)
				if b == config.StartupError {
					require.ErrorContains(t, err, "port in use")
					return
				}
				require.NoError(t, err)
			})
		})
	}
}

// TestReloadStartsAnInputLeftOut: an input that startup_error_behavior = "ignore" left out
// is started again by a reload, even with its table unchanged, as Telegraf's reload starts
// every plugin afresh.
func TestReloadStartsAnInputLeftOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := &testSinks{down: map[string]bool{}}
		reg := ts.registry(t)
		flaky := &flakyService{fails: 1}
		require.NoError(t, reg.AddInput(morse.InputInfo{Name: "flaky", Description: "fails its first start",
			New: func() morse.Input { return flaky }}))
		text := agentBase + "[[inputs.flaky]]\n  startup_error_behavior = \"ignore\"\n[[outputs.sink]]\n  sink = \"s\"\n"
		cfg1 := loadTestConfig(t, reg, text)
		a, err := NewAgent(cfg1, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		cfg2 := loadTestConfig(t, reg, text)
		require.Equal(t, cfg1.Inputs[0].Fingerprint, cfg2.Inputs[0].Fingerprint)
		require.NoError(t, a.Reload(context.Background(), cfg2))
		time.Sleep(3 * time.Second)
		require.NoError(t, stop())
		flaky.mu.Lock()
		defer flaky.mu.Unlock()
		require.Equal(t, 2, flaky.tries, "left out at start, started by the reload")
		_, written := outputOf(cfg1, 0).Snapshot() // the unchanged output was kept
		require.NotEmpty(t, written, "and it gathers")
	})
}
