package prometheusclient

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// newClient builds an output from a TOML table, as the loader does, listening on a free
// port of 127.0.0.1, without the collectors unless the table names them.
func newClient(t *testing.T, toml string) *Client {
	t.Helper()
	c := New()
	c.Listen = "127.0.0.1:0"
	c.CollectorsExclude = []string{"gocollector", "process"}
	testutil.Decode(t, toml, c)
	return c
}

// scrape connects c, GETs path and returns the answer's body.
func scrape(t *testing.T, c *Client, mod func(*http.Request)) (*http.Response, string) {
	t.Helper()
	if c.Addr() == nil {
		require.NoError(t, c.Connect(context.Background()))
		t.Cleanup(func() { require.NoError(t, c.Close()) })
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+c.Addr().String()+"/metrics", nil)
	require.NoError(t, err)
	if mod != nil {
		mod(req)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		r = gz
	}
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return resp, string(b)
}

func readLines(t *testing.T, file string) []morse.Metric {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	return testutil.Parse(t, string(b), false)
}

// TestMetricVersions: what a scrape serves for the same kinds of metrics under
// metric_version 1 and 2, names, labels, types and values as Telegraf derives them.
func TestMetricVersions(t *testing.T) {
	for _, v := range []string{"1", "2"} {
		t.Run("v"+v, func(t *testing.T) {
			c := newClient(t, "metric_version = "+v+"\nexpiration_interval = \"0s\"")
			err := c.Write(context.Background(), readLines(t, "v"+v+".influx"))
			var pe *morse.PartialWriteError
			if v == "1" {
				// "disk" has its string field as a label and free as a sample; none is dropped.
				require.NoError(t, err)
			} else {
				require.NoError(t, err, "%v", errors.As(err, &pe))
			}
			_, body := scrape(t, c, nil)
			testutil.Golden(t, filepath.Join("testdata", "v"+v+".prom"), []byte(body))
		})
	}
}
