package prometheusclient

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

func TestBasicAuthIPRangeAndHeaders(t *testing.T) {
	c := newClient(t, `basic_username = "scraper"
basic_password = "s3cret"
http_headers = {"X-Special-Header" = "Special-Value"}`)
	require.NoError(t, c.Write(context.Background(), testutil.Parse(t, "up value=1 1700000000000000000\n", false)))
	resp, _ := scrape(t, c, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Special-Value", resp.Header.Get("X-Special-Header"))
	resp, _ = scrape(t, c, func(r *http.Request) { r.SetBasicAuth("scraper", "wrong") })
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, body := scrape(t, c, func(r *http.Request) { r.SetBasicAuth("scraper", "s3cret") })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "\nup 1\n")

	denied := newClient(t, `ip_range = ["192.0.2.0/24"]`)
	resp, _ = scrape(t, denied, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	allowed := newClient(t, `ip_range = ["192.0.2.0/24", "127.0.0.0/8"]`)
	resp, _ = scrape(t, allowed, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestTLSAndGzip(t *testing.T) {
	certs := testutil.NewCerts(t)
	c := newClient(t, `tls_cert = "`+certs.ServerCert+`"
tls_key = "`+certs.ServerKey+`"`)
	require.NoError(t, c.Write(context.Background(), testutil.Parse(t, "up value=1 1700000000000000000\n", false)))
	require.NoError(t, c.Connect(context.Background()))
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.ClientTLS(false)}}
	resp, err := hc.Get("https://" + c.Addr().String() + "/metrics")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, resp.Uncompressed, "the Go client asked for gzip and got it")
}

// TestExpirationAndExportTimestamp: a series not written for expiration_interval is gone
// from the next scrape; export_timestamp writes the metric's time in milliseconds.
func TestExpirationAndExportTimestamp(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Unix(1700000000, 0).UnixNano())
	c := newClient(t, `expiration_interval = "60s"
export_timestamp = true`)
	c.Now = func() time.Time { return time.Unix(0, now.Load()) }
	require.NoError(t, c.Write(context.Background(), testutil.Parse(t, "a value=1 1700000000123000000\nb value=2 1700000000000000000\n", false)))
	now.Add(int64(50 * time.Second))
	require.NoError(t, c.Write(context.Background(), testutil.Parse(t, "b value=3 1700000050000000000\n", false)))
	_, body := scrape(t, c, nil)
	require.Contains(t, body, "\na 1 1700000000123\n")
	now.Add(int64(11 * time.Second))
	_, body = scrape(t, c, nil)
	require.NotContains(t, body, "\na ")
	require.Contains(t, body, "\nb 3 1700000050000\n")
}

// TestDropsAreCounted: a metric that makes no sample, and one that would pass max_series,
// are reported by position and reason, so that the engine counts them.
func TestDropsAreCounted(t *testing.T) {
	c := newClient(t, `max_series = 2`)
	err := c.Write(context.Background(), testutil.Parse(t, "a value=1\nlog msg=\"text only\"\nb value=2\nc value=3\n", false))
	var pe *morse.PartialWriteError
	require.True(t, errors.As(err, &pe), "%v", err)
	written, droppedN := pe.Split(4)
	require.Equal(t, 2, written)
	require.Equal(t, 2, droppedN)
	require.Equal(t, morse.ReasonSerialize, pe.Reason)
	require.Equal(t, []int{1}, pe.Indices)
	require.Len(t, pe.More, 1)
	require.Equal(t, ReasonSeriesLimit, pe.More[0].Reason)
	require.Equal(t, []int{3}, pe.More[0].Indices)
}

// TestInternalMetricsAndCollectors: with internal_metrics, morse's own counters are served
// beside what is written, and the default collectors serve go_* and process_*.
func TestInternalMetricsAndCollectors(t *testing.T) {
	c := New()
	c.Listen = "127.0.0.1:0"
	c.InternalMetrics = true
	reg := selfstat.New()
	reg.SetVersion("1.2.3")
	reg.NewSeries("internal_write", map[string]string{"output": "prometheus_client", "_id": "1"}).Counter("metrics_written").Add(5)
	reg.NewSeries("internal_write", map[string]string{"output": "prometheus_client", "_id": "2"}).Counter("metrics_written").Add(2)
	c.SetSelfStats(reg)
	require.NoError(t, c.Init())
	_, body := scrape(t, c, nil)
	require.Contains(t, body, `internal_write_metrics_written{output="prometheus_client",version="1.2.3"} 7`+"\n")
	require.Contains(t, body, "# TYPE go_goroutines gauge\n")
	require.Contains(t, body, "# TYPE process_cpu_seconds_total counter\n")
	require.Contains(t, body, "# TYPE process_resident_memory_bytes gauge\n")
}

// TestScrapeAllocations: a scrape allocates at most 2 times per series (the issue's
// bound); it allocates about once per scrape.
func TestScrapeAllocations(t *testing.T) {
	const n = 10_000
	c := New()
	c.CollectorsExclude = []string{"gocollector", "process"}
	require.NoError(t, c.Init())
	batch := make([]morse.Metric, 0, n)
	for i := range n {
		batch = append(batch, morse.NewMetric("m", []morse.Tag{{Key: "i", Value: strconv.Itoa(i)}},
			[]morse.Field{{Key: "value", Value: morse.Float(float64(i))}}, time.Now()))
	}
	require.NoError(t, c.Write(context.Background(), batch))
	allocs := testing.AllocsPerRun(5, func() {
		bp := bufPool.Get().(*[]byte)
		*bp = c.render((*bp)[:0])
		bufPool.Put(bp)
	})
	require.LessOrEqual(t, allocs, float64(2*n))
	require.Less(t, allocs, float64(10), "a scrape of a store that did not grow allocates a few times, not per series")
}

// TestConnectTwiceListensOnce: a Connect while listening keeps the one listener (a second
// one on port 0 would be leaked), a cancelled context starts nothing, and after Close a
// Connect listens again.
func TestConnectTwiceListensOnce(t *testing.T) {
	c := newClient(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Connect(ctx), context.Canceled)
	require.Nil(t, c.Addr())
	require.NoError(t, c.Connect(context.Background()))
	first := c.Addr().String()
	require.NoError(t, c.Connect(context.Background()))
	require.Equal(t, first, c.Addr().String())
	require.NoError(t, c.Close())
	require.Nil(t, c.Addr())
	require.NoError(t, c.Connect(context.Background()))
	require.NotNil(t, c.Addr())
	require.NoError(t, c.Close())
}
