package influxdblistener

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
)

// hungOutput is a sink that never answers: every write waits until the engine cancels it,
// after the output's timeout.
type hungOutput struct{}

func (hungOutput) Connect(context.Context) error { return nil }
func (hungOutput) Close() error                  { return nil }
func (hungOutput) Write(ctx context.Context, _ []morse.Metric) error {
	<-ctx.Done()
	return ctx.Err()
}
func (hungOutput) WriteTimeout() time.Duration { return 100 * time.Millisecond }

// runAgent runs the agent of cfg, whose input l is, until the test ends
// (testserver.RunAgent), and returns once l listens.
func runAgent(t *testing.T, cfg *config.Config, l *InfluxDBListener) *agent.Agent {
	t.Helper()
	ag, _ := testserver.RunAgent(t, cfg)
	require.Eventually(t, func() bool { return l.Addr() != nil }, waitFor, time.Millisecond)
	return ag
}

// TestAHungOutputNeverBlocksTheListener: with the only output's sink hung and its buffer
// full, every write is answered 204, and the buffer evicts exactly what it cannot hold: all
// lines but the 100 it holds and the batch of 10 in a write, if one is. An output is taken to
// keep up until a write fails, so the listener is held back until the first write times
// out (100 ms), and never again: the writes take well under backpressure_max_wait.
func TestAHungOutputNeverBlocksTheListener(t *testing.T) {
	l := newListener(t)
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.ShutdownTimeout = morse.Duration(100 * time.Millisecond)
	cfg.AddInput("influxdb_listener", l)
	oc := cfg.AddOutput("hung", hungOutput{})
	oc.Common.MetricBatchSize, oc.Common.MetricBufferLimit, oc.Common.FlushInterval = 10, 100, morse.Duration(time.Hour)
	agent := runAgent(t, cfg, l)

	c := newClient(t, l.Addr(), nil)
	begun := time.Now()
	const requests, perRequest = 50, 100
	for r := range requests {
		var b strings.Builder
		for i := range perRequest {
			fmt.Fprintf(&b, "m,r=%d v=%di %d\n", r, i, r*perRequest+i+1)
		}
		a := c.must("POST", "/write?db=x", []byte(b.String()))
		require.Equal(t, http.StatusNoContent, a.status, "request %d: %s", r, a.body)
	}
	require.Less(t, time.Since(begun), time.Duration(defaultMaxWait), "held back only until the first write failed")

	st := agent.Outputs()[0].Stats
	require.Equal(t, int64(requests*perRequest), st.Added)
	require.Equal(t, 100, st.BufferSize, "the buffer is full")
	// The hung write is cancelled every 100 ms and retried, so its batch of 10 may be in a
	// write or back in the buffer when the stats are read.
	require.Contains(t, []int64{requests*perRequest - 100 - 10, requests*perRequest - 100}, st.DroppedByReason[morse.ReasonBufferFull],
		"every line but the 100 held and the 10 in the hung write, if one is in flight, was evicted, and counted")
	require.Zero(t, st.Written)
	c.healthy()
}
