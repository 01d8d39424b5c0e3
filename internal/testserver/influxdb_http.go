package testserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// httpClient talks to the test servers; its timeout bounds every helper call.
var httpClient = &http.Client{Timeout: 15 * time.Second}

// QueryResponse is InfluxDB's /query answer. Numbers stay json.Number, so a
// test compares them exactly; times are integers in nanoseconds (epoch=ns).
type QueryResponse struct {
	Results []QueryResult `json:"results"`
	Error   string        `json:"error,omitempty"`
}

// QueryResult is the answer to one statement.
type QueryResult struct {
	StatementID int      `json:"statement_id"`
	Series      []Series `json:"series,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// Series is one series of a result.
type Series struct {
	Name    string            `json:"name"`
	Tags    map[string]string `json:"tags,omitempty"`
	Columns []string          `json:"columns"`
	Values  [][]any           `json:"values"`
}

// Query runs q against db (GET /query, epoch=ns) and returns the results of
// its statements. It fails the test on a transport error, a status other
// than 200, or an error in the answer.
func (i *Influx) Query(t testing.TB, db, q string) []QueryResult {
	t.Helper()
	v := url.Values{"q": {q}, "epoch": {"ns"}}
	if db != "" {
		v.Set("db", db)
	}
	resp, err := httpClient.Get(i.URL() + "/query?" + v.Encode())
	require.NoError(t, err, "testserver: query %q", q)
	return decodeQuery(t, resp, q)
}

// Exec runs statements that change the server, such as CREATE DATABASE or
// CREATE RETENTION POLICY (POST /query), and fails the test on any error.
func (i *Influx) Exec(t testing.TB, q string) {
	t.Helper()
	resp, err := httpClient.PostForm(i.URL()+"/query", url.Values{"q": {q}})
	require.NoError(t, err, "testserver: exec %q", q)
	decodeQuery(t, resp, q)
}

func decodeQuery(t testing.TB, resp *http.Response, q string) []QueryResult {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "testserver: %q answered %s", q, body)
	var out QueryResponse
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&out), "testserver: %q answered %s", q, body)
	require.Empty(t, out.Error, "testserver: %q", q)
	for _, r := range out.Results {
		require.Empty(t, r.Error, "testserver: %q statement %d", q, r.StatementID)
	}
	return out.Results
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
