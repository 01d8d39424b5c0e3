package prometheus

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopShared()
	os.Exit(code)
}

// exposedCounts reads node_exporter's own text exposition and counts its sample lines by
// name: what metric_version 2 makes one metric of each.
func exposedCounts(t *testing.T, url string) map[string]int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		counts[name]++
	}
	require.NoError(t, sc.Err())
	return counts
}

// TestScrapeNodeExporter: morse scrapes a real node_exporter, in protobuf (which morse's
// Accept prefers and node_exporter serves, gzipped) and in the text format, and gets one
// metric per sample line of the exporter's own /metrics, family by family; also when
// http_headers asks for gzip itself (the scrape gunzips what the exporter then gzips).
func TestScrapeNodeExporter(t *testing.T) {
	node := testserver.SharedNodeExporter(t)
	want := exposedCounts(t, node.URL())
	require.Greater(t, len(want), 20, "node_exporter serves its families")
	req, err := http.NewRequest(http.MethodGet, node.URL(), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", acceptHeader)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.True(t, New().isProtobuf(resp.Header.Get("Content-Type")), "node_exporter answers morse's Accept in protobuf")
	for _, format := range []string{"protobuf", "text", "text-gzip-asked"} {
		t.Run(format, func(t *testing.T) {
			p := New()
			p.URLs = []string{node.URL()}
			p.MetricVersion = 2
			switch format {
			case "text":
				p.HTTPHeaders = map[string]string{"Accept": "text/plain;version=0.0.4"}
			case "text-gzip-asked":
				p.HTTPHeaders = map[string]string{"Accept": "text/plain;version=0.0.4", "Accept-Encoding": "gzip"}
			}
			reg := selfstat.New()
			p.SetSelfStats(reg)
			require.NoError(t, p.Init())
			acc := &testutil.Accumulator{}
			require.NoError(t, p.Gather(context.Background(), acc))
			require.Empty(t, acc.Errors())
			got := map[string]int{}
			for _, m := range acc.Metrics() {
				require.Equal(t, "prometheus", m.Name())
				u, _ := m.Tag("url")
				require.Equal(t, node.URL(), u)
				for _, f := range m.Fields() {
					got[f.Key]++
				}
			}
			require.Equal(t, want, got)
			success := 0
			for _, s := range reg.Snapshot() {
				if s.Measurement == "internal_prometheus" && len(s.Tags) == 2 && s.Tags[0].Value == "success" {
					success = int(s.Fields[0].Value)
				}
			}
			require.Equal(t, 1, success, "the scrape is counted in internal_prometheus gathers_total")
		})
	}
}
