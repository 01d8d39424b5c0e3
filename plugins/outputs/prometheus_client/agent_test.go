package prometheusclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	prometheusclient "github.com/morse-agent/morse/plugins/outputs/prometheus_client"
)

// tick adds one metric per gather, for the agent to have an input.
type tick struct{}

func (tick) Gather(_ context.Context, acc morse.Accumulator) error {
	acc.AddFields("tick", map[string]any{"n": 1}, nil)
	return nil
}

// TestListensAtStart runs a whole agent whose prometheus_client output is never written
// to (its flush interval is an hour): the endpoint listens from the start, and the real
// Prometheus scraping it finds an up target (up 1) with no series, where a refused
// connection would be up 0.
func TestListensAtStart(t *testing.T) {
	prom := testserver.SharedPrometheus(t)
	c := prometheusclient.New()
	c.Listen = "127.0.0.1:0"
	c.CollectorsExclude = []string{"gocollector", "process"}
	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.AddInput("tick", tick{})
	cfg.AddOutput("prometheus_client", c).Common.FlushInterval = morse.Duration(time.Hour)
	testserver.RunAgent(t, cfg)

	require.Eventually(t, func() bool { return c.Addr() != nil }, 10*time.Second, 10*time.Millisecond,
		"listening without a batch written to it")
	const name = "prometheus_client_at_start"
	prom.AddTarget(t, name, c.Addr().String(), "/metrics")
	require.Eventually(t, func() bool {
		up := prom.Query(t, `up{test="`+name+`"}`)
		return len(up) == 1 && up[0].Value == 1
	}, 30*time.Second, 100*time.Millisecond, "Prometheus finds the target up")
	require.Empty(t, prom.Query(t, `{test="`+name+`",__name__!~"up|scrape_.*"}`), "with no series")
}
