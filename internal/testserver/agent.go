package testserver

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
)

// RunAgent runs a morse agent built from cfg, quiet, in this process, and returns it with a
// function that stops it and returns Run's error; stop may be called more than once and
// returns the same error each time. The agent is stopped when the test ends in any case.
// It is the one agent starter of the tests that run a whole agent in process; the tests of
// package agent build their own, package testserver importing agent.
func RunAgent(t testing.TB, cfg *config.Config) (a *agent.Agent, stop func() error) {
	t.Helper()
	a, err := agent.NewAgent(cfg, agent.AgentOptions{Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	var (
		once   sync.Once
		runErr error
	)
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-errc })
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return a, stop
}

// Listener is a service input that reports the address it is bound to, nil until started.
type Listener interface {
	morse.ServiceInput
	Addr() net.Addr
}

// ListenerAgent is a running agent with one listener and one testutil.ScriptOutput.
type ListenerAgent struct {
	Out  *testutil.ScriptOutput
	Addr net.Addr
	stop func() error
}

// Stop ends the agent: the listener stops, then the output is flushed. After Stop, Out holds
// everything that the agent will ever deliver, so a test can check for exactly-once delivery.
func (a *ListenerAgent) Stop(t testing.TB) {
	t.Helper()
	require.NoError(t, a.stop(), "the agent stops cleanly with nothing left unsent")
}

// RunListener runs an agent with in as its only input and a ScriptOutput (RunAgent), and
// waits until the listener is bound.
func RunListener(t testing.TB, name string, in Listener) *ListenerAgent {
	t.Helper()
	out := &testutil.ScriptOutput{}
	return runListener(t, name, in, out, out)
}

// RunLineListener is RunListener with a testutil.LineOutput, so that a listener may hand
// its lines over as line metrics.
func RunLineListener(t testing.TB, name string, in Listener) *ListenerAgent {
	t.Helper()
	out := &testutil.LineOutput{}
	return runListener(t, name, in, out, &out.ScriptOutput)
}

func runListener(t testing.TB, name string, in Listener, plugin morse.Output, out *testutil.ScriptOutput) *ListenerAgent {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.FlushInterval = morse.Duration(20 * time.Millisecond)
	cfg.Agent.ShutdownTimeout = morse.Duration(5 * time.Second)
	cfg.AddInput(name, in)
	cfg.AddOutput("mem", plugin)
	_, stop := RunAgent(t, cfg)
	require.Eventually(t, func() bool { return in.Addr() != nil }, 10*time.Second, time.Millisecond,
		"the listener binds its address")
	return &ListenerAgent{Out: out, Addr: in.Addr(), stop: stop}
}
