package flood

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
	_ "github.com/morse-agent/morse/plugins/inputs/all" // inputs.internal, whose path Go keeps from bench/
	"github.com/morse-agent/morse/plugins/inputs/statsd"
	"github.com/morse-agent/morse/plugins/inputs/syslog"
	_ "github.com/morse-agent/morse/plugins/outputs/file"
)

// TestConfigLoadsAsTheCountNeeds loads the rendered config with the agent's own loader, so
// that a misspelt option fails here rather than in the middle of make bench-statsd, and
// checks what the count relies on: counters cleared after every gather, a buffer that holds
// many gathers of the flood's series, and the listener where the flood goes.
func TestConfigLoadsAsTheCountNeeds(t *testing.T) {
	for _, proto := range []string{"udp", "tcp"} {
		text := agentConfig{Input: "statsd", Protocol: proto, Listen: "127.0.0.1:9", OutFile: "/tmp/flood.out"}.render()
		cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "flood.conf", Data: []byte(text)}}})
		require.NoError(t, err, text)
		require.Len(t, cfg.Inputs, 2)
		s, ok := cfg.Inputs[0].Plugin.(*statsd.Statsd)
		require.True(t, ok, "the first input is statsd")
		require.Equal(t, proto, s.Protocol)
		require.Equal(t, "127.0.0.1:9", s.ServiceAddress)
		require.True(t, s.DeleteCounters, "the sum of the counters is the lines captured only if each gather clears them")
		require.Equal(t, 10000, s.AllowedPendingMessages)
		require.Equal(t, "internal", cfg.Inputs[1].Name)
		require.Len(t, cfg.Outputs, 1)
		require.Equal(t, "file", cfg.Outputs[0].Name)
		require.GreaterOrEqual(t, cfg.Agent.MetricBufferLimit, 20*50*1000, "twenty gathers of 50 names x 1000 hosts")
	}
}

func TestSyslogConfigLoads(t *testing.T) {
	text := agentConfig{Input: "syslog", Protocol: "tcp", Listen: "127.0.0.1:9", OutFile: "/tmp/flood.out"}.render()
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "flood.conf", Data: []byte(text)}}})
	require.NoError(t, err, text)
	require.Len(t, cfg.Inputs, 2)
	s, ok := cfg.Inputs[0].Plugin.(*syslog.Syslog)
	require.True(t, ok, "the first input is syslog")
	require.Equal(t, "tcp://127.0.0.1:9", s.Server)
	require.Equal(t, "octet-counting", s.Framing)
	require.NotContains(t, text, "inputs.statsd")
}
