package listenertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
)

// MemOutput is an output that keeps every metric written to it, so that a test can compare
// what arrived with what was sent.
type MemOutput struct {
	mu      sync.Mutex
	metrics []morse.Metric
	changed chan struct{} // closed and replaced whenever metrics arrive
}

var _ morse.Output = (*MemOutput)(nil)

// Connect implements morse.Output.
func (o *MemOutput) Connect(context.Context) error { return nil }

// Close implements morse.Output.
func (o *MemOutput) Close() error { return nil }

// Write keeps the batch.
func (o *MemOutput) Write(_ context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.metrics = append(o.metrics, batch...)
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
	return nil
}

// LineOutput is a MemOutput that takes line metrics as they are (morse.LineWriter).
type LineOutput struct{ MemOutput }

// WritesLines implements morse.LineWriter.
func (o *LineOutput) WritesLines() bool { return true }

// LineMetrics counts the metrics written so far that are held as line-protocol text.
func (o *MemOutput) LineMetrics() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, m := range o.metrics {
		if _, ok := m.Line(); ok {
			n++
		}
	}
	return n
}

// Metrics returns a copy of everything written so far.
func (o *MemOutput) Metrics() []morse.Metric {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.metrics)
}

// Wait blocks until at least n metrics were written, failing the test after timeout. It
// wakes on each write rather than polling.
func (o *MemOutput) Wait(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		have := len(o.metrics)
		if have >= n {
			o.mu.Unlock()
			return
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waited %s for %d metrics, have %d", timeout, n, have)
		}
	}
}

// Listener is a service input that reports the address it is bound to, nil until started.
type Listener interface {
	morse.ServiceInput
	Addr() net.Addr
}

// Agent is a running agent with one listener and one MemOutput.
type Agent struct {
	Out  *MemOutput
	Addr net.Addr
	stop func() error
	once sync.Once
	err  error
}

// Stop ends the agent: the listener stops, then the output is flushed. After Stop, Out holds
// everything that the agent will ever deliver, so a test can check for exactly-once delivery.
func (a *Agent) Stop(t testing.TB) {
	t.Helper()
	a.once.Do(func() { a.err = a.stop() })
	require.NoError(t, a.err, "the agent stops cleanly with nothing left unsent")
}

// RunAgent builds a morse.Agent in code with in as its only input and a MemOutput, runs it,
// and waits until the listener is bound. The agent is stopped when the test ends if the test
// has not stopped it.
func RunAgent(t testing.TB, name string, in Listener) *Agent {
	t.Helper()
	out := &MemOutput{}
	return runAgent(t, name, in, out, out)
}

// RunLineAgent is RunAgent with a LineOutput, so that a listener may hand its lines over as
// line metrics.
func RunLineAgent(t testing.TB, name string, in Listener) *Agent {
	t.Helper()
	out := &LineOutput{}
	return runAgent(t, name, in, out, &out.MemOutput)
}

func runAgent(t testing.TB, name string, in Listener, plugin morse.Output, out *MemOutput) *Agent {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.FlushInterval = morse.Duration(20 * time.Millisecond)
	cfg.Agent.ShutdownTimeout = morse.Duration(5 * time.Second)
	cfg.AddInput(name, in)
	cfg.AddOutput("mem", plugin)
	agent, err := agent.NewAgent(cfg, agent.AgentOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- agent.Run(ctx) }()
	a := &Agent{Out: out, stop: func() error { cancel(); return <-errc }}
	t.Cleanup(func() { a.once.Do(func() { a.err = a.stop() }) })
	require.Eventually(t, func() bool { return in.Addr() != nil }, 10*time.Second, time.Millisecond,
		"the listener binds its address")
	a.Addr = in.Addr()
	return a
}

// Canon writes each metric as one comparable string: name, tags, typed fields in order and
// the time in nanoseconds, sorted. Two lists are equal exactly when the metrics are, in any
// order of arrival.
func Canon(ms []morse.Metric) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		var b strings.Builder
		b.WriteString(m.Name())
		for _, tg := range m.Tags() {
			fmt.Fprintf(&b, ",%s=%s", tg.Key, tg.Value)
		}
		for j, f := range m.Fields() {
			sep := ","
			if j == 0 {
				sep = " "
			}
			fmt.Fprintf(&b, "%s%s=%s:%s", sep, f.Key, f.Value.Type(), f.Value)
		}
		fmt.Fprintf(&b, " %d", m.Time().UnixNano())
		out[i] = b.String()
	}
	slices.Sort(out)
	return out
}
