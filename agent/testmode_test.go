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
	"github.com/morse-agent/morse/internal/testutil"
)

// rateInput numbers its gathers and records when each ran, as a plugin that reports a rate
// between two samples would need to know.
type rateInput struct {
	mu    sync.Mutex
	times []time.Time
}

func (r *rateInput) Gather(_ context.Context, acc morse.Accumulator) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.times = append(r.times, time.Now())
	acc.AddMetric(morse.NewMetric("rate", nil, []morse.Field{{Key: "gather", Value: morse.Int(int64(len(r.times)))}}, time.Now()))
	return nil
}

func testAgent(t *testing.T, cfg *config.Config) *Agent {
	cfg.Agent.OmitHostname = true
	cfg.AddOutput("mem", &testutil.ScriptOutput{})
	a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	return a
}

// TestTestGathersRateInputsTwice: as Telegraf's --test, cpu and procstat are gathered once
// into nothing and TestWarmUp later once more, which is the gather printed; other inputs
// are gathered once.
func TestTestGathersRateInputsTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cpu, procstat, other := &rateInput{}, &rateInput{}, &rateInput{}
		cfg.AddInput("cpu", cpu)
		cfg.AddInput("procstat", procstat)
		cfg.AddInput("mem", other)
		a := testAgent(t, cfg)
		var got []int64
		require.NoError(t, a.Test(context.Background(), func(m morse.Metric) {
			got = append(got, m.Fields()[0].Value.Int())
		}))
		require.Equal(t, []int64{2, 2, 1}, got, "the second gather of cpu and procstat, the one of mem")
		require.Len(t, cpu.times, 2)
		require.Equal(t, TestWarmUp, cpu.times[1].Sub(cpu.times[0]))
		require.Len(t, other.times, 1)
	})
}

// TestTestFailsWhenAGatherFails: an input's errors make Test fail with Telegraf's message,
// after the other inputs printed what they gathered. flaky reports one error through its
// accumulator and returns another: two.
func TestTestFailsWhenAGatherFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.AddInput("flaky", &flakyInput{seqInput{Count: 1, Name: "f"}})
		cfg.AddInput("seq", &seqInput{Count: 1, Name: "s"})
		a := testAgent(t, cfg)
		var names []string
		err := a.Test(context.Background(), func(m morse.Metric) { names = append(names, m.Name()) })
		require.EqualError(t, err, "input plugins recorded 2 errors")
		require.Equal(t, []string{"f", "s"}, names)
	})
}

// TestTestWarmUpEndsWithItsContext: a --test stopped during the wait returns at once.
func TestTestWarmUpEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.AddInput("cpu", &rateInput{})
		a := testAgent(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), TestWarmUp/5)
		defer cancel()
		start := time.Now()
		require.ErrorIs(t, a.Test(ctx, func(morse.Metric) {}), context.DeadlineExceeded)
		require.Equal(t, TestWarmUp/5, time.Since(start))
	})
}
