package influxdblistener

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// answerWithin is how long a legitimate request may take while the listener is flooded.
const answerWithin = time.Second

// timedRequest sends one request on a new connection, as a sender arriving during the flood
// would, and returns its status and how long it took from dialling to the whole answer.
func timedRequest(t *testing.T, url, method string, body []byte) (int, time.Duration) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	begun := time.Now()
	resp, err := (&http.Client{Transport: tr, Timeout: waitFor}).Do(req)
	require.NoError(t, err, "%s %s during the flood", method, url)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, time.Since(begun)
}

// TestIdleConnectionsDoNotLockClientsOut opens 1,024, 5,000 and 10,000 connections to a
// listener with the default max_connections (1,024) that send nothing, or half a request
// header, and stay open. A legitimate /ping and /write, on new connections, must each be
// answered within a second: the idle connections that sent no complete request are closed
// to make room. Before that, the cap turned every new connection away until the idle ones
// timed out. A keep-alive client that was served before the flood keeps its connection,
// since connections without a request go first.
func TestIdleConnectionsDoNotLockClientsOut(t *testing.T) {
	// The flood's 10,000 sockets, and at most max_connections on the listener's side.
	testutil.RaiseNoFile(t, 10_000+1024+512)
	var worst time.Duration
	for _, tc := range []struct {
		idle   int
		prefix string
	}{
		{1024, ""}, {5000, ""}, {10_000, ""},
		{10_000, "POST /write?db=x HTTP/1.1\r\nHost: morse\r\nContent-Le"},
	} {
		name := fmt.Sprintf("%d idle, %d header bytes", tc.idle, len(tc.prefix))
		t.Run(name, func(t *testing.T) {
			var worstHere time.Duration
			// Under -race on a busy host the flood can take longer than the default 10s
			// read_timeout, which would close the keeper's idle connection (and the flood's)
			// before the flood ends; the timeouts are not what this test is about.
			l := newListener(t, func(l *InfluxDBListener) { l.ReadTimeout = morse.Duration(time.Minute) })
			require.Equal(t, 1024, l.MaxConnections, "the default cap")
			acc, st := start(t, l)
			keeper := newClient(t, l.Addr(), nil)
			keeper.healthy()

			testutil.Flood(t, l.Addr().String(), tc.idle, []byte(tc.prefix))
			require.Eventually(t, func() bool {
				return st.Counter("connections_opened").Get()+st.Counter("connections_refused").Get() >= int64(tc.idle+1)
			}, waitFor, time.Millisecond, "the listener has taken in every connection of the flood")

			base := "http://" + l.Addr().String()
			for range 3 {
				status, took := timedRequest(t, base+"/ping", http.MethodGet, nil)
				require.Equal(t, http.StatusNoContent, status)
				require.Less(t, took, answerWithin, "/ping")
				worstHere = max(worstHere, took)
				status, took = timedRequest(t, base+"/write?db=x", http.MethodPost, []byte("legit v=1\n"))
				require.Equal(t, http.StatusNoContent, status)
				require.Less(t, took, answerWithin, "/write")
				worstHere = max(worstHere, took)
			}
			opened := st.Counter("connections_opened").Get()
			keeper.healthy()
			require.Equal(t, opened, st.Counter("connections_opened").Get(),
				"the keeper's idle connection was kept through the flood and served again")
			require.Equal(t, 1+3+1, acc.NMetrics())
			require.Zero(t, st.Counter("connections_refused").Get())
			require.Positive(t, st.Counter("connections_evicted").Get())
			worst = max(worst, worstHere)
			t.Logf("%s: worst answer %s; evicted %d", name, worstHere, st.Counter("connections_evicted").Get())
		})
	}
	t.Logf("worst answer during any flood: %s", worst)
}
