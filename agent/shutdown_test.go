package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testutil"
)

// slowStopInput is a service input whose Stop takes stopTakes, as a listener that lets its
// requests in flight finish does.
type slowStopInput struct {
	stopTakes time.Duration
}

func (*slowStopInput) Gather(context.Context, morse.Accumulator) error { return nil }
func (*slowStopInput) Start(context.Context, morse.Accumulator) error  { return nil }
func (s *slowStopInput) Stop()                                         { time.Sleep(s.stopTakes) }
func (*slowStopInput) SampleConfig() string                            { return "" }

// silentOutput takes each write and never answers: Write returns only when its context
// ends, or, when deaf, when the test releases it.
type silentOutput struct {
	testutil.ScriptOutput
	deaf    bool
	release chan struct{}
}

func (o *silentOutput) Write(ctx context.Context, _ []morse.Metric) error {
	if o.deaf {
		<-o.release
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestShutdownEndsWithinTheTimeout: however many outputs are stuck on a sink that never
// answers, one of them with a write that ignores its cancellation, and however slowly the
// inputs stop, Run returns within shutdown_timeout + 1 s, and every output reports what it
// left, the batch it had in flight included.
func TestShutdownEndsWithinTheTimeout(t *testing.T) {
	for _, n := range []int{1, 10, 50} {
		t.Run(fmt.Sprint(n, " outputs"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { shutdownWithin(t, n) })
		})
	}
}

func shutdownWithin(t *testing.T, outputs int) {
	const timeout = 2 * time.Second
	release := make(chan struct{})
	reg := morse.NewRegistry()
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "seq", New: func() morse.Input { return &seqInput{Count: 20, Name: "seq"} }}))
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "slowstop", New: func() morse.Input { return &slowStopInput{stopTakes: 5 * time.Second} }}))
	require.NoError(t, reg.AddOutput(morse.OutputInfo{Name: "silent", New: func() morse.Output { return &silentOutput{release: release} }}))
	conf := fmt.Sprintf(agentBase+"  shutdown_timeout = %q\n[[inputs.seq]]\n[[inputs.slowstop]]\n[[inputs.slowstop]]\n", timeout)
	conf = strings.Replace(conf, `  shutdown_timeout = "5s"`+"\n", "", 1)
	for range outputs {
		conf += "[[outputs.silent]]\n  metric_batch_size = 10\n  metric_buffer_limit = 100\n"
	}
	cfg := loadTestConfig(t, reg, conf)
	cfg.Outputs[0].Plugin.(*silentOutput).deaf = true
	var mu sync.Mutex
	var drops []batch.DropEvent // the outputs report from goroutines of their own
	onDrop := func(ev batch.DropEvent) {
		mu.Lock()
		defer mu.Unlock()
		drops = append(drops, ev)
	}
	a, err := NewAgent(cfg, AgentOptions{Logger: testutil.QuietLogger(), OnDrop: onDrop})
	require.NoError(t, err)
	stop := runAgent(t, a)
	time.Sleep(2500 * time.Millisecond) // every output has a batch in flight and a backlog
	synctest.Wait()
	start := time.Now()
	err = stop()
	took := time.Since(start)
	require.LessOrEqual(t, took, timeout+time.Second, "Run returned %s after it was asked to stop", took)
	t.Logf("%d outputs: Run returned %s after the stop (shutdown_timeout %s)", outputs, took, timeout)

	close(release)                    // the deaf write returns at last
	defer time.Sleep(5 * time.Second) // and the inputs left stopping end, before the bubble does
	var unsent []*batch.UnsentError
	for _, e := range flatten(err) {
		var u *batch.UnsentError
		if errors.As(e, &u) {
			unsent = append(unsent, u)
		}
	}
	require.Len(t, unsent, outputs, "every output reports what it left: %v", err)
	for _, u := range unsent {
		require.Equal(t, 10, u.Unknown, "the batch in flight was sent and never answered")
		require.Equal(t, 60, u.Left, "Left counts the batch in flight and the buffer")
	}
	total := map[string]int{}
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range drops {
		total[ev.Reason] += ev.Count
	}
	// Three gathers of 20 each: 10 in flight, 50 buffered.
	require.Equal(t, map[string]int{morse.ReasonUnknown: 10 * outputs, morse.ReasonShutdown: 50 * outputs}, total,
		"each metric reported once")
	for _, o := range a.Outputs() {
		require.Equal(t, o.Stats.Added, o.Stats.Dropped, "each metric added is dropped once")
	}
}

// flatten lists the errors joined in err.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
