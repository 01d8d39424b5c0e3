package redis

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	_ "github.com/morse-agent/morse/plugins/inputs/internal" // inputs.internal
)

// TestAgentCountsFailuresAndKeepsSchedule: inside a running agent, an instance whose server
// never answers fails each gather within the interval with an error that internal_gather
// counts, while an instance on a good server beside it keeps gathering every interval.
func TestAgentCountsFailuresAndKeepsSchedule(t *testing.T) {
	srv := testserver.SharedRedis(t)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hole.Close()
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "test.conf", Data: []byte(`
[agent]
  interval = "300ms"
  flush_interval = "100ms"
  omit_hostname = true
[[inputs.redis]]
  alias = "silent"
  servers = ["tcp://` + hole.Addr().String() + `"]
[[inputs.redis]]
  alias = "good"
  servers = ["tcp://` + srv.Addr + `"]
[[inputs.internal]]
`)}}})
	require.NoError(t, err)
	out := &testutil.ScriptOutput{}
	cfg.AddOutput("sink", out)
	_, stop := testserver.RunAgent(t, cfg)

	// counter is the latest value of an internal_gather field of the instance alias.
	counter := func(alias, field string) (n int64) {
		for _, m := range out.Metrics() {
			if a, _ := m.Tag("alias"); m.Name() == "internal_gather" && a == alias {
				if v, ok := m.Field(field); ok {
					n = max(n, fieldInt(v))
				}
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return counter("silent", "errors") >= 2 },
		20*time.Second, 50*time.Millisecond, "the silent server's failures are counted")
	require.NoError(t, stop())
	redisMetrics := 0
	for _, m := range out.Metrics() {
		if m.Name() == "redis" {
			p, _ := m.Tag("port")
			require.Equal(t, portOf(srv.Addr), p, "only the good server has metrics")
			redisMetrics++
		}
	}
	require.Zero(t, counter("good", "errors"))
	require.Positive(t, counter("good", "metrics_gathered"))
	require.Positive(t, counter("silent", "gather_timeouts"), "the silent gather ends at the interval")
	require.GreaterOrEqual(t, int64(redisMetrics), counter("silent", "errors"),
		"the good instance gathered in every interval the silent one failed")
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func fieldInt(v morse.Value) int64 {
	switch x := v.Interface().(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	}
	return 0
}
