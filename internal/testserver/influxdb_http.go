package testserver

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/influxquery"
)

// httpClient talks to the test servers; its timeout bounds every helper call.
var httpClient = &http.Client{Timeout: 15 * time.Second}

// Query runs q against db (db may be empty) with times in nanoseconds (epoch=ns) and returns
// the results of its statements, with each value typed as the server keeps it: int64,
// float64, string, bool or nil, and the time an int64. It fails the test on any error: the
// server's, a statement's or the transport's.
func (i *Influx) Query(t testing.TB, db, q string) []influxquery.Result {
	t.Helper()
	c, err := influxquery.NewClient(influxquery.ClientOptions{URL: i.URL(), HTTPClient: httpClient})
	require.NoError(t, err)
	opts := []influxquery.QueryOption{influxquery.WithEpoch("ns")}
	if db != "" {
		opts = append(opts, influxquery.WithDatabase(db))
	}
	resp, err := c.Query(context.Background(), q, opts...) // httpClient's timeout bounds it
	require.NoError(t, err, "testserver: %q", q)
	return resp.Results
}

// Exec runs statements that change the server, such as CREATE DATABASE or CREATE RETENTION
// POLICY, and fails the test on any error.
func (i *Influx) Exec(t testing.TB, q string) {
	t.Helper()
	i.Query(t, "", q)
}

// WriteResult is the raw answer to a /write request.
type WriteResult struct {
	Status int
	Body   string // as sent, including the trailing newline InfluxDB adds
	Header http.Header
}

// Write posts line protocol to /write?db=DB (nanosecond precision) and
// returns the answer as is; it fails the test only on a transport error.
func (i *Influx) Write(t testing.TB, db, lines string) WriteResult {
	t.Helper()
	return i.WriteParams(t, url.Values{"db": {db}}, lines)
}

// WriteParams posts line protocol to /write with the given query parameters
// (db, rp, precision, consistency, u, p).
func (i *Influx) WriteParams(t testing.TB, params url.Values, lines string) WriteResult {
	t.Helper()
	resp, err := httpClient.Post(i.URL()+"/write?"+params.Encode(), "text/plain; charset=utf-8", strings.NewReader(lines))
	require.NoError(t, err, "testserver: write")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return WriteResult{Status: resp.StatusCode, Body: string(body), Header: resp.Header}
}
