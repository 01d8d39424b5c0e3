package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// wedgedInput blocks in Gather, ignoring its context, until release is closed.
type wedgedInput struct{ release chan struct{} }

func (w *wedgedInput) Gather(context.Context, morse.Accumulator) error {
	<-w.release
	return nil
}

// wedgedOutput blocks in Write, ignoring its context, until release is closed.
type wedgedOutput struct {
	testutil.ScriptOutput
	release chan struct{}
}

func (w *wedgedOutput) Write(ctx context.Context, b []morse.Metric) error {
	<-w.release
	return w.ScriptOutput.Write(ctx, b)
}

func (w *wedgedOutput) WriteTimeout() time.Duration { return 5 * time.Second }

// TestStuckNamesWedgedLoopsOnly: waiting for the next gather or flush, or backing off, is
// progress; a gather or a write that ignores its context past the limit is named.
func TestStuckNamesWedgedLoopsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		cfg := config.DefaultConfig()
		cfg.Agent.OmitHostname, cfg.Agent.RoundInterval = true, false
		cfg.Agent.FlushInterval = morse.Duration(7 * time.Second) // never at a gather's instant
		cfg.AddInput("seq", &seqInput{Count: 1, Name: "m"})
		cfg.AddOutput("fine", &testutil.ScriptOutput{})
		cfg.AddOutput("down", &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return context.DeadlineExceeded }})
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		time.Sleep(65 * time.Second) // between gathers, at 0s, 10s, ..., 60s
		require.Empty(t, a.Stuck(time.Now(), 0), "gathering, flushing and backing off are progress")
		require.Contains(t, a.Status(), "1 inputs, 2 outputs; 7 metrics buffered, 7 written, 0 dropped")
		require.ErrorContains(t, stop(), "output down: 7 metrics left unsent")

		cfg = config.DefaultConfig()
		cfg.Agent.OmitHostname, cfg.Agent.RoundInterval = true, false
		cfg.AddInput("wedged", &wedgedInput{release: release})
		cfg.AddInput("seq", &seqInput{Count: 1, Name: "m"})
		cfg.AddOutput("wedged", &wedgedOutput{release: release}).Common.FlushInterval = morse.Duration(time.Second)
		a, err = NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop = runAgent(t, a)
		// The input's bound is its interval (10s) and the output's its timeout (5s); the
		// output's first write starts after its first flush, at 1s.
		time.Sleep(20 * time.Second)
		require.Empty(t, a.Stuck(time.Now(), 30*time.Second), "not yet past the bounds plus grace")
		stuck := a.Stuck(time.Now(), 5*time.Second)
		require.Len(t, stuck, 2, "%v", stuck)
		require.Contains(t, stuck[0], "inputs.wedged (gathering for 20s)")
		require.Contains(t, stuck[1], "outputs.wedged (writing for 19s)")
		close(release)
		synctest.Wait()
		require.Empty(t, a.Stuck(time.Now(), 0), "released, they make progress again")
		_ = stop()
	})
}

// TestFailingAndFillingNameBackingOffOutputs: Failing names an output whose writes have
// failed and been retried for longer than asked, Filling one whose buffer holds more than
// the fraction asked; a healthy output is named by neither, and a recovered one no more.
func TestFailingAndFillingNameBackingOffOutputs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		cfg := config.DefaultConfig()
		cfg.Agent.OmitHostname, cfg.Agent.RoundInterval = true, false
		cfg.Agent.FlushInterval = morse.Duration(time.Second)
		cfg.AddInput("seq", &seqInput{Count: 1, Name: "m"})
		cfg.AddOutput("fine", &testutil.ScriptOutput{})
		oc := cfg.AddOutput("influxdb", &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
			if down.Load() {
				return morse.Retryable(errors.New("connection refused"), time.Second)
			}
			return nil
		}})
		oc.Common.Alias, oc.Common.MetricBufferLimit, oc.Common.MetricBatchSize = "eu", 10, 5
		a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		stop := runAgent(t, a)
		defer func() { _ = stop() }()
		// Gathers at 0s, 10s, ..., 60s; the first write fails at 1s, the retries every second.
		time.Sleep(65 * time.Second)
		require.Equal(t, []string{"outputs.influxdb::eu (failing for 1m4s)"}, a.Failing(time.Now(), 30*time.Second))
		require.Empty(t, a.Failing(time.Now(), 64*time.Second), "not longer than asked")
		require.Equal(t, []string{"outputs.influxdb::eu (buffer holds 7 of 10 metrics)"}, a.Filling(0.5))
		require.Empty(t, a.Filling(0.7), "not more than asked")
		down.Store(false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Empty(t, a.Failing(time.Now(), 0), "written again")
		require.Empty(t, a.Filling(0), "the buffer is empty")
	})
}
