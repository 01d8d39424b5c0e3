package influxdb

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testutil"
)

// The tests in this file use hand-written sinks, only for what a real InfluxDB 1.6.7 cannot
// be made to do: send Retry-After, hang, or reset a connection in the middle of a request.

func fakeSink(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRetryAfterFromFakeSink(t *testing.T) {
	for _, tc := range []struct {
		status int
		value  string
		want   time.Duration
	}{
		{http.StatusTooManyRequests, "3", 3 * time.Second},
		{http.StatusServiceUnavailable, time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat), 2 * time.Minute},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			url := fakeSink(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", tc.value)
				http.Error(w, "slow down", tc.status)
			})
			o := connected(t, url, "db", func(o *InfluxDB) { o.SkipDatabaseCreation = true })
			err := o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)})
			requireClass(t, err, want{outcome: morse.OutcomeRetry, after: tc.want})
		})
	}
}

// TestRetryAfterIsHonoured: with a backoff of half a minute, the batch still arrives about a
// second later, because the sink asked for one second.
func TestRetryAfterIsHonoured(t *testing.T) {
	var calls, lines atomic.Int64
	url := fakeSink(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "request throttled, queue full", http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		lines.Add(int64(countLines(b)))
		w.WriteHeader(http.StatusNoContent)
	})
	o := connected(t, url, "db", func(o *InfluxDB) { o.SkipDatabaseCreation = true })
	w := batchWriter(t, o, batch.Options{BatchSize: 2, RetryInitial: 30 * time.Second, RetryMax: time.Minute})
	start := time.Now()
	require.NoError(t, w.WriteBatch([]morse.Metric{point("m", 1, "v", 1.0), point("m", 2, "v", 2.0)}))
	require.Eventually(t, func() bool { return lines.Load() == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Less(t, time.Since(start), 10*time.Second)
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.Equal(t, int64(2), calls.Load())
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// hangingSink accepts requests and never answers, until the client gives up (the server
// notices once the body is read) or the test ends.
func hangingSink(t *testing.T) string {
	release := make(chan struct{})
	url := fakeSink(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close, which waits for us
	return url
}

func TestTimeout(t *testing.T) {
	o := connected(t, hangingSink(t), "db", func(o *InfluxDB) {
		o.SkipDatabaseCreation = true
		o.Timeout = morse.Duration(200 * time.Millisecond)
	})
	start := time.Now()
	err := o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)})
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

func TestTimeoutFailsOver(t *testing.T) {
	var got atomic.Int64
	good := fakeSink(t, func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	o := connected(t, hangingSink(t), "db", func(o *InfluxDB) {
		o.SkipDatabaseCreation = true
		o.Timeout = morse.Duration(200 * time.Millisecond)
		o.URLs = append(o.URLs, good)
	})
	require.NoError(t, o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)}))
	require.Equal(t, int64(1), got.Load())
}

// TestConnectionReset: the sink reads the request and resets the connection (RST, not FIN).
func TestConnectionReset(t *testing.T) {
	url := fakeSink(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close()
	})
	o := connected(t, url, "db", func(o *InfluxDB) { o.SkipDatabaseCreation = true })
	err := o.Write(testutil.Context(t), []morse.Metric{point("m", 1, "v", 1.0)})
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
	var re *morse.RetryableError
	require.ErrorAs(t, err, &re)
	require.Zero(t, re.RetryAfter)
	var serr *ServerError
	require.False(t, errors.As(err, &serr), "no answer came: %v", err)
}
