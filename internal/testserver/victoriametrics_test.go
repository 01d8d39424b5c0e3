package testserver

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// postLines writes body to /api/v2/write and returns the status.
func postLines(t *testing.T, v *VictoriaMetrics, body string) int {
	t.Helper()
	resp, err := httpClient.Post(v.URL()+"/api/v2/write?org=o&bucket=b", "text/plain", strings.NewReader(body))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// TestVictoriaMetricsQuirks pins down what the harness's documentation says
// VictoriaMetrics 1.79.5 does with line protocol on /api/v2/write.
func TestVictoriaMetricsQuirks(t *testing.T) {
	v := StartVictoriaMetrics(t, VictoriaMetricsOptions{})
	now := time.Now().Truncate(time.Millisecond)
	ns, ms := now.UnixNano(), now.UnixMilli()
	old := now.Add(-60 * 24 * time.Hour).UnixNano() // beyond the one-month retention
	body := fmt.Sprintf("m,host=a f=1.5,i=2i,u=3u,b=true,s=\"x\" %d\n"+
		"old v=1 %d\n"+
		"bad v=1 notatime\n"+
		"n v=abc %d\n", ns, old, ns)
	require.Equal(t, http.StatusNoContent, postLines(t, v, body), "VictoriaMetrics answers 204 whatever the lines hold")

	got := VMSamples(v.ExportSamples(t, `{__name__=~".+"}`, 6, 20*time.Second))
	require.Equal(t, []string{
		fmt.Sprintf("m_b{host=a} 1@%d", ms),
		fmt.Sprintf("m_f{host=a} 1.5@%d", ms),
		fmt.Sprintf("m_i{host=a} 2@%d", ms),
		fmt.Sprintf("m_s{host=a} 0@%d", ms), // a string field is stored as 0
		fmt.Sprintf("m_u{host=a} 3@%d", ms),
		fmt.Sprintf("n_v{} 0@%d", ms), // an unparseable value too
		// "old" is beyond the retention and "bad" has no valid timestamp: neither is stored,
		// and org and bucket leave no label.
	}, got)
}

// TestVictoriaMetricsCounter reads the server's own request counter.
func TestVictoriaMetricsCounter(t *testing.T) {
	v := StartVictoriaMetrics(t, VictoriaMetricsOptions{})
	const series = `vm_http_requests_total{path="/influx/write", protocol="influx"}`
	require.Zero(t, v.Counter(t, series))
	for range 3 {
		require.Equal(t, http.StatusNoContent, postLines(t, v, fmt.Sprintf("c v=1 %d\n", time.Now().UnixNano())))
	}
	require.Eventually(t, func() bool { return v.Counter(t, series) == 3 }, 10*time.Second, 100*time.Millisecond)
}

// TestVictoriaMetricsRestart: Stop takes the server down, so that writes are refused, and
// Restart brings it back on the same address with the data it had stored.
func TestVictoriaMetricsRestart(t *testing.T) {
	v := StartVictoriaMetrics(t, VictoriaMetricsOptions{})
	ms := time.Now().UnixMilli()
	require.Equal(t, http.StatusNoContent, postLines(t, v, fmt.Sprintf("r v=1 %d\n", ms*int64(time.Millisecond))))
	v.Flush(t)
	v.Stop(t)
	_, err := httpClient.Post(v.URL()+"/api/v2/write", "text/plain", strings.NewReader("r v=2\n"))
	require.Error(t, err, "stopped: nothing listens on %s", v.Addr())
	v.Restart(t)
	require.Equal(t, []string{fmt.Sprintf("r_v{} 1@%d", ms)}, VMSamples(v.ExportSamples(t, `{__name__="r_v"}`, 1, 20*time.Second)))
}
