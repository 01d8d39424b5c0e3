package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/outputs/health"
)

// The agent answers what the health output asks, by the methods of its interface.
var _ health.Engine = (*agent.Agent)(nil)

// ticks adds one metric per gather. While wedge holds a channel, a gather blocks on it,
// ignoring its context, as a wedged plugin blocks on a read, until the test closes it.
type ticks struct {
	n     atomic.Int64
	wedge atomic.Pointer[chan struct{}]
}

func (i *ticks) Gather(_ context.Context, acc morse.Accumulator) error {
	if ch := i.wedge.Load(); ch != nil {
		<-*ch
	}
	acc.AddFields("ticks", map[string]any{"n": i.n.Add(1)}, nil)
	return nil
}

// probe answers the endpoint's status and body, or 0 when it does not answer.
func probe(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAgentTurnsEndpointUnhealthy runs a whole agent in process with outputs.health beside
// a sink that the test takes down and brings back, and an input that the test wedges: the
// endpoint listens from the start with no batch written to it, turns 503 while the sink
// has failed for longer than unhealthy_after_failing and while its buffer is above
// unhealthy_above_buffer_fill, names the wedged input, and is 200 again after each.
func TestAgentTurnsEndpointUnhealthy(t *testing.T) {
	var down atomic.Bool
	in := &ticks{}
	sink := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
		if down.Load() {
			return morse.Retryable(errors.New("connection refused"), 50*time.Millisecond)
		}
		return nil
	}}
	h := health.New()
	h.ServiceAddress = "tcp://127.0.0.1:0"
	h.UnhealthyAfterFailing = morse.Duration(300 * time.Millisecond)
	h.UnhealthyAboveBufferFill = 0.5
	h.WedgedGrace = morse.Duration(200 * time.Millisecond)

	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.Interval = morse.Duration(50 * time.Millisecond)
	cfg.Agent.FlushInterval = morse.Duration(50 * time.Millisecond)
	cfg.AddInput("ticks", in)
	so := cfg.AddOutput("sink", sink)
	so.Common.MetricBufferLimit, so.Common.MetricBatchSize = 10, 5
	cfg.AddOutput("health", h).Common.FlushInterval = morse.Duration(time.Hour) // no batch reaches it
	testserver.RunAgent(t, cfg)

	require.Eventually(t, func() bool { return h.Addr() != nil }, 10*time.Second, 10*time.Millisecond,
		"listening without a batch written to it")
	url := "http://" + h.Addr().String() + "/"
	status := func(want int, body string) func() bool {
		return func() bool {
			got, b := probe(url)
			return got == want && strings.Contains(b, body)
		}
	}
	require.Eventually(t, status(http.StatusOK, "OK"), 10*time.Second, 10*time.Millisecond)

	down.Store(true)
	require.Eventually(t, status(http.StatusServiceUnavailable, "backing off: outputs.sink (failing for"), 10*time.Second, 10*time.Millisecond)
	down.Store(false)
	require.Eventually(t, status(http.StatusOK, "OK"), 10*time.Second, 10*time.Millisecond)

	// A buffer above half its limit: 10 metrics, written in batches of 5, filled at 20
	// metrics a second while the sink is down.
	down.Store(true)
	require.Eventually(t, status(http.StatusServiceUnavailable, "buffer filling: outputs.sink (buffer holds"), 10*time.Second, 10*time.Millisecond)
	down.Store(false)
	require.Eventually(t, status(http.StatusOK, "OK"), 10*time.Second, 10*time.Millisecond)

	wedge := make(chan struct{})
	in.wedge.Store(&wedge)
	require.Eventually(t, status(http.StatusServiceUnavailable, "wedged: inputs.ticks (gathering for"), 10*time.Second, 10*time.Millisecond)
	in.wedge.Store(nil)
	close(wedge)
	require.Eventually(t, status(http.StatusOK, "OK"), 10*time.Second, 10*time.Millisecond)
}

// TestReloadMovesEndpointToNewInstance: a reload that replaces outputs.health with a new
// instance on the same address serves again once the old one has let the port go: the new
// one's connect is retried at start until it binds, with no metric written to it.
func TestReloadMovesEndpointToNewInstance(t *testing.T) {
	build := func(addr string, status int) (*config.Config, *health.Health) {
		h := health.New()
		h.ServiceAddress = "tcp://" + addr
		h.DefaultStatus = status
		cfg := config.DefaultConfig()
		cfg.Agent.OmitHostname = true
		cfg.AddInput("ticks", &ticks{})
		cfg.AddOutput("health", h).Common.FlushInterval = morse.Duration(time.Hour)
		return cfg, h
	}
	cfg, old := build(testutil.FreeAddr(t), http.StatusOK)
	a, _ := testserver.RunAgent(t, cfg)
	require.Eventually(t, func() bool { return old.Addr() != nil }, 10*time.Second, 10*time.Millisecond)
	addr := old.Addr().String()
	url := "http://" + addr + "/"
	got, _ := probe(url)
	require.Equal(t, http.StatusOK, got)

	cfg, fresh := build(addr, http.StatusAccepted) // a status that tells the new one apart
	require.NoError(t, a.Reload(testutil.Context(t), cfg))
	require.Eventually(t, func() bool { got, _ := probe(url); return got == http.StatusAccepted }, 20*time.Second, 20*time.Millisecond,
		"the new instance serves the address")
	require.Nil(t, old.Addr(), "the old one was closed")
	require.NotNil(t, fresh.Addr())
}
