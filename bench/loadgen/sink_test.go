package loadgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/influxquery"
)

func post(t *testing.T, url string, body []byte, gz bool) *http.Response {
	t.Helper()
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, err := zw.Write(body)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		body = b.Bytes()
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestSinkCountsPlainAndGzipBodies(t *testing.T) {
	for _, parse := range []bool{false, true} {
		sink := &Sink{Parse: parse}
		base := "http://" + startSink(t, sink)
		plain := []byte("m,t=a v=1 1\nm,t=b v=2 2\n\nm v=3 3") // a blank line, no final newline
		zipped := []byte(strings.Repeat("cpu,host=h usage_idle=99.5 1\n", 1000))
		require.Equal(t, http.StatusNoContent, post(t, base+"/write?db=x", plain, false).StatusCode)
		require.Equal(t, http.StatusNoContent, post(t, base+"/api/v2/write?bucket=x", zipped, true).StatusCode)

		st := sink.Stats()
		require.Equal(t, int64(1003), st.Lines, "parse %v", parse)
		require.Equal(t, int64(2), st.Requests)
		require.Equal(t, int64(len(plain)+len(zipped)), st.Bytes)
		require.Less(t, st.WireBytes, st.Bytes, "gzip shrank the second body")
		require.Zero(t, st.BadRequests)

		code, body := get(t, base+"/stats")
		require.Equal(t, http.StatusOK, code)
		var served SinkStats
		require.NoError(t, json.Unmarshal([]byte(body), &served))
		require.Equal(t, st, served)
	}
}

func TestSinkCountsLinesSplitAcrossReads(t *testing.T) {
	var c lineCounter
	for _, chunk := range []string{"a v", "=1\n", "\n", "b v=2", "\nc v=3\n", "d"} {
		c.write([]byte(chunk))
	}
	c.end()
	require.Equal(t, int64(4), c.lines)
}

func TestSinkParseCountsRefusedLines(t *testing.T) {
	sink := &Sink{Parse: true}
	base := "http://" + startSink(t, sink)
	post(t, base+"/write", []byte("m v=1 1\nm v=1 garbage\nm v=2 2\n"), false)
	st := sink.Stats()
	require.Equal(t, int64(2), st.Lines)
	require.Equal(t, int64(1), st.ParseErrors)
}

func TestSinkAnswersLikeInfluxDB(t *testing.T) {
	sink := &Sink{}
	base := "http://" + startSink(t, sink)
	code, body := get(t, base+"/query?q=CREATE+DATABASE+x")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"results":[{"statement_id":0}]}`, body)
	resp := post(t, base+"/query", []byte("q=CREATE DATABASE x"), false)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The InfluxDB output creates its database with influxquery, which asks for MessagePack:
	// the sink's JSON must still read as success.
	c, err := influxquery.NewClient(influxquery.ClientOptions{URL: base, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	ans, err := c.Query(context.Background(), "CREATE DATABASE x")
	require.NoError(t, err)
	require.Equal(t, []influxquery.Result{{StatementID: 0}}, ans.Results)
	require.Equal(t, int64(3), sink.Stats().Queries)

	code, _ = get(t, base+"/ping")
	require.Equal(t, http.StatusNoContent, code)
	code, _ = get(t, base+"/write")
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

func TestSinkRefusesBrokenGzip(t *testing.T) {
	sink := &Sink{}
	base := "http://" + startSink(t, sink)
	req, err := http.NewRequest(http.MethodPost, base+"/write", strings.NewReader("not gzip"))
	require.NoError(t, err)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, int64(1), sink.Stats().BadRequests)
	require.Zero(t, sink.Stats().Lines)
}

func TestServeSinkRefusesRemoteAddresses(t *testing.T) {
	require.Error(t, ServeSink(t.Context(), "0.0.0.0:0", &Sink{}, nil))
	require.Error(t, ServeSink(t.Context(), "10.0.0.1:80", &Sink{}, nil))
}
