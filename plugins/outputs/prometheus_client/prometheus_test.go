package prometheusclient

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopShared()
	os.Exit(code)
}

// TestPrometheusScrapes: a real Prometheus 2.42 scrapes the endpoint and stores the series
// with their labels and values, and records each family's type, counters, gauges,
// histograms and summaries alike, for both metric versions.
func TestPrometheusScrapes(t *testing.T) {
	prom := testserver.SharedPrometheus(t)
	for _, v := range []string{"1", "2"} {
		t.Run("v"+v, func(t *testing.T) {
			c := newClient(t, "metric_version = "+v+`
[metric_types]
  gauge = ["mem_used_percent"]`)
			now := time.Now().UnixNano()
			lines := readLines(t, "v"+v+".influx")
			for i := range lines {
				lines[i] = lines[i].WithTime(time.Unix(0, now))
			}
			require.NoError(t, c.Write(context.Background(), lines))
			require.NoError(t, c.Connect(context.Background()))
			t.Cleanup(func() { require.NoError(t, c.Close()) })
			name := "prometheus_client_v" + v
			prom.AddTarget(t, name, c.Addr().String(), "/metrics")

			sel := `{test="` + name + `"}`
			var got []testserver.PromSample
			require.Eventually(t, func() bool {
				got = prom.Query(t, `count by (__name__) (`+`{test="`+name+`",__name__!~"up|scrape_.*"})`)
				return len(got) > 0
			}, 30*time.Second, 100*time.Millisecond, "Prometheus scraped the endpoint")
			value := func(q string) float64 {
				s := prom.Query(t, q)
				require.Len(t, s, 1, q)
				return s[0].Value
			}
			types := prom.Types(t, name)
			if v == "1" {
				require.Equal(t, 90.5, value(`cpu_usage_idle{cpu="cpu0",test="`+name+`"}`))
				require.Equal(t, 1027.0, value(`http_requests_total`+sel))
				require.Equal(t, 7.0, value(`http_duration_bucket{le="0.5",test="`+name+`"}`))
				require.Equal(t, 0.4, value(`rpc_seconds{quantile="0.9",test="`+name+`"}`))
				require.Equal(t, map[string]string{"cpu_usage_idle": "unknown", "http_requests_total": "counter",
					"temperature": "gauge", "http_duration": "histogram", "rpc_seconds": "summary"},
					pick(types, "cpu_usage_idle", "http_requests_total", "temperature", "http_duration", "rpc_seconds"))
				return
			}
			require.Equal(t, 1234.5, value(`node_cpu_seconds_total{mode="idle",test="`+name+`"}`))
			require.Equal(t, 9.0, value(`http_request_duration_seconds_bucket{le="1",test="`+name+`"}`))
			require.Equal(t, 10.0, value(`http_request_duration_seconds_count`+sel))
			require.Equal(t, 12.5, value(`mem_used_percent`+sel))
			require.Equal(t, map[string]string{"node_cpu_seconds_total": "counter", "mem_used_percent": "gauge",
				"http_request_duration_seconds": "histogram", "rpc_seconds": "summary", "go_goroutines": "unknown"},
				pick(types, "node_cpu_seconds_total", "mem_used_percent", "http_request_duration_seconds", "rpc_seconds", "go_goroutines"))
		})
	}
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}
