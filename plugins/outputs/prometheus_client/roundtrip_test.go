package prometheusclient

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/inputs/prometheus"
)

// roundTripProm is served by node_exporter's textfile collector beside its own families:
// the shapes its collectors do not have.
const roundTripProm = `# HELP morse_rt_latency_seconds A histogram.
# TYPE morse_rt_latency_seconds histogram
morse_rt_latency_seconds_bucket{path="/a",le="0.1"} 1
morse_rt_latency_seconds_bucket{path="/a",le="1"} 3
morse_rt_latency_seconds_bucket{path="/a",le="+Inf"} 4
morse_rt_latency_seconds_sum{path="/a"} 7.5
morse_rt_latency_seconds_count{path="/a"} 4
# HELP morse_rt_rpc_seconds A summary.
# TYPE morse_rt_rpc_seconds summary
morse_rt_rpc_seconds{quantile="0.5"} 0.2
morse_rt_rpc_seconds{quantile="0.99"} NaN
morse_rt_rpc_seconds_sum 12
morse_rt_rpc_seconds_count 30
# HELP morse_rt_edge Values at the edges of float64.
# TYPE morse_rt_edge gauge
morse_rt_edge{kind="nan"} NaN
morse_rt_edge{kind="pinf"} +Inf
morse_rt_edge{kind="ninf"} -Inf
# HELP morse_rt_label_info A label value with every escape.
# TYPE morse_rt_label_info gauge
morse_rt_label_info{v="quote\" backslash\\ newline\n end"} 1
# HELP morse_rt_requests_total A counter.
# TYPE morse_rt_requests_total counter
morse_rt_requests_total{code="200"} 1027
`

// sampleCounts reads node_exporter's own text exposition and counts its sample lines by
// name: the series Prometheus stores when it scrapes the exporter itself, but for the
// counters, gauges and untyped samples whose value is NaN, of which Telegraf's prometheus
// input, and so morse's, makes no metric (a summary's NaN quantile it keeps).
func sampleCounts(t *testing.T, url string) map[string]int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	counts, types := map[string]int{}, map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		rest := line[len(name):]
		if strings.HasPrefix(rest, "{") { // no label value here holds a brace
			rest = rest[strings.LastIndexByte(rest, '}')+1:]
		}
		if strings.Fields(rest)[0] == "NaN" && types[name] != "summary" {
			continue
		}
		counts[name]++
	}
	require.NoError(t, sc.Err())
	return counts
}

// TestNodeExporterRoundTrip: node_exporter (its own families and a textfile of histograms,
// summaries, NaN, infinities and escaped label values) → inputs.prometheus, metric_version 2
// → this output, metric_version 2 with export_timestamp → the real Prometheus scraping it.
// Prometheus stores as many series of each name as node_exporter serves, with the values,
// label values, types (histogram, summary, counter) and the time of the scrape.
func TestNodeExporterRoundTrip(t *testing.T) {
	node := testserver.StartTextfileNodeExporter(t, map[string]string{"roundtrip.prom": roundTripProm})
	prom := testserver.SharedPrometheus(t)
	want := sampleCounts(t, node.URL())
	require.Equal(t, 3, want["morse_rt_latency_seconds_bucket"])

	scrapedAt := time.Now().Add(-30 * time.Second).Truncate(time.Millisecond)
	in := prometheus.New()
	in.URLs = []string{node.URL()}
	in.MetricVersion = 2
	in.URLTag = ""
	in.Now = func() time.Time { return scrapedAt }
	require.NoError(t, in.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, in.Gather(context.Background(), acc))
	require.Empty(t, acc.Errors())

	c := newClient(t, "metric_version = 2\nexport_timestamp = true")
	require.NoError(t, c.Write(context.Background(), acc.Metrics()))
	require.NoError(t, c.Connect(context.Background()))
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	const name = "node_exporter_round_trip"
	prom.AddTarget(t, name, c.Addr().String(), "/metrics")
	sel := `{test="` + name + `"}`
	require.Eventually(t, func() bool { return len(prom.Query(t, `morse_rt_requests_total`+sel)) == 1 }, 30*time.Second, 100*time.Millisecond,
		"Prometheus scraped the endpoint")

	got := map[string]int{}
	for _, s := range prom.Query(t, `count by (__name__) ({test="`+name+`",__name__!~"up|scrape_.*"})`) {
		got[s.Metric["__name__"]] = int(s.Value)
	}
	require.Equal(t, want, got, "series per name, as node_exporter serves them")

	value := func(q string) float64 {
		s := prom.Query(t, q)
		require.Len(t, s, 1, q)
		return s[0].Value
	}
	require.Empty(t, prom.Query(t, `morse_rt_edge{kind="nan"}`), "a NaN gauge gives no metric, as in Telegraf")
	require.Equal(t, math.Inf(1), value(`morse_rt_edge{kind="pinf",test="`+name+`"}`))
	require.Equal(t, math.Inf(-1), value(`morse_rt_edge{kind="ninf",test="`+name+`"}`))
	require.True(t, math.IsNaN(value(`morse_rt_rpc_seconds{quantile="0.99",test="`+name+`"}`)))
	require.Equal(t, 0.2, value(`morse_rt_rpc_seconds{quantile="0.5",test="`+name+`"}`))
	require.Equal(t, 30.0, value(`morse_rt_rpc_seconds_count`+sel))
	require.Equal(t, 3.0, value(`morse_rt_latency_seconds_bucket{le="1",test="`+name+`"}`))
	require.Equal(t, 4.0, value(`morse_rt_latency_seconds_bucket{le="+Inf",test="`+name+`"}`))
	require.Equal(t, 7.5, value(`morse_rt_latency_seconds_sum`+sel))
	require.Equal(t, 1.0, value(`morse_rt_label_info{v="quote\" backslash\\ newline\n end",test="`+name+`"}`))
	require.Equal(t, float64(scrapedAt.UnixMilli())/1000, value(`timestamp(morse_rt_requests_total`+sel+`)`),
		"the sample's time is that of the scrape, exported")

	types := prom.Types(t, name)
	require.Equal(t, map[string]string{"morse_rt_latency_seconds": "histogram", "morse_rt_rpc_seconds": "summary",
		"morse_rt_requests_total": "counter", "node_cpu_seconds_total": "counter"},
		pick(types, "morse_rt_latency_seconds", "morse_rt_rpc_seconds", "morse_rt_requests_total", "node_cpu_seconds_total"))
}
