package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStampReaderFindsEveryTimestampHoweverTheBodyIsCut(t *testing.T) {
	body := "m,t=a v=1 10\nm v=2 11\n\nm v=3\nm v=4 -5\nm v=5 12"
	want := []int64{10, 11, -5, 12}
	for cut := 1; cut <= len(body); cut++ {
		var r stampReader
		for p := body; len(p) > 0; {
			n := min(cut, len(p))
			r.write([]byte(p[:n]))
			p = p[n:]
		}
		r.end()
		require.Equal(t, want, r.stamps, "pieces of %d bytes", cut)
		require.Equal(t, int64(1), r.untracked, "the line without a timestamp, pieces of %d bytes", cut)
	}
}

func TestStampReaderGivesUpOnAnOverlongLine(t *testing.T) {
	var r stampReader
	long := strings.Repeat("x", maxCarry)
	r.write([]byte("m v=1 1\nm s=\"" + long[:maxCarry/2]))
	r.write([]byte(long[maxCarry/2:] + "\" 2\nm v=3 3\n"))
	r.end()
	require.Equal(t, []int64{1, 3}, r.stamps)
	require.Equal(t, int64(1), r.untracked)
}

func TestLastInt(t *testing.T) {
	for line, want := range map[string]int64{
		"m v=1 1700000000000000000": 1700000000000000000,
		"m v=1 -12 ":                -12,
		"m v=1 12\r":                12,
	} {
		got, ok := lastInt([]byte(line))
		require.True(t, ok, line)
		require.Equal(t, want, got, line)
	}
	for _, line := range []string{"m v=1", "m v=1 12a", "m v=1 99999999999999999999", "m v=1 -", ""} {
		_, ok := lastInt([]byte(line))
		require.False(t, ok, line)
	}
}

func TestSeenSetCountsDistinctAndDuplicates(t *testing.T) {
	var s seenSet
	s.add([]int64{1, 2, 3, 4095, 4096, -1, -4097})
	s.add([]int64{2, 4096, 5, -1})
	d, dup := s.counts()
	require.Equal(t, int64(8), d)
	require.Equal(t, int64(3), dup)
	s.reset()
	s.add([]int64{2})
	d, dup = s.counts()
	require.Equal(t, int64(1), d)
	require.Zero(t, dup)
}

func TestSinkCountsDistinctLinesAndResets(t *testing.T) {
	sink := &Sink{Distinct: true}
	base := "http://" + startSink(t, sink)
	post(t, base+"/write", []byte("m v=1 1\nm v=1 2\n"), false)
	post(t, base+"/write", []byte("m v=1 2\nm v=1 3\nm v=1\n"), true)
	st := sink.Stats()
	require.Equal(t, int64(5), st.Lines)
	require.Equal(t, int64(3), st.Distinct)
	require.Equal(t, int64(1), st.Duplicates)
	require.Equal(t, int64(1), st.Untracked)

	require.Equal(t, http.StatusNoContent, post(t, base+"/reset", nil, false).StatusCode)
	require.Equal(t, SinkStats{}, sink.Stats())
	code, _ := get(t, base+"/reset")
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

func TestPacedSinkAnswersNoFasterThanItsRate(t *testing.T) {
	sink := &Sink{LinesPerSec: 1000}
	base := "http://" + startSink(t, sink)
	body := []byte(strings.Repeat("m v=1 1\n", 100))
	start := time.Now()
	for range 3 {
		require.Equal(t, http.StatusNoContent, post(t, base+"/write", body, false).StatusCode)
	}
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "300 lines at 1000 lines/s")
	require.Equal(t, int64(300), sink.Stats().Lines)
}

// TestSendRetriesWhatTheServerCannotTakeYet: a listener holding its senders back answers
// 503 with Retry-After; the sender sends the same body again and counts the retry, and
// every line arrives once.
func TestSendRetriesWhatTheServerCannotTakeYet(t *testing.T) {
	sink := &Sink{Distinct: true}
	var calls atomic.Int64
	full := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%3 != 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":"buffer full"}`, http.StatusServiceUnavailable)
			return
		}
		sink.Handler().ServeHTTP(w, r)
	}))
	defer full.Close()
	rep := run(t, Config{Transport: "http", Addr: strings.TrimPrefix(full.URL, "http://"), Path: "/write",
		Connections: 1, LinesPerRequest: 10, Lines: 50})
	require.Equal(t, int64(50), rep.Lines)
	require.Zero(t, rep.FailedLines)
	require.Equal(t, int64(10), rep.Retries)
	require.Equal(t, map[string]int64{"503": 10, "204": 5}, rep.HTTPStatus)
	st := sink.Stats()
	require.Equal(t, int64(50), st.Distinct)
	require.Zero(t, st.Duplicates)
}

func TestSendGivesUpAfterMaxRetries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "full", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	rep := run(t, Config{Transport: "http", Addr: strings.TrimPrefix(srv.URL, "http://"), Path: "/write",
		Connections: 1, LinesPerRequest: 10, Lines: 10})
	require.Equal(t, int64(10), rep.FailedLines)
	require.Equal(t, int64(maxRetries), rep.Retries)
	require.Equal(t, []string{"HTTP 503: full"}, rep.ErrorSamples)
}

func TestRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		header  string
		attempt int
		want    time.Duration
	}{
		{"2", 0, 2 * time.Second},
		{"3600", 0, maxRetryAfter},
		{"", 0, 100 * time.Millisecond},
		{"", 2, 400 * time.Millisecond},
		{"", 30, 5 * time.Second},
		{"soon", 1, 200 * time.Millisecond},
		{time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0, 0},
	} {
		require.Equal(t, tc.want, retryDelay(tc.header, tc.attempt), fmt.Sprintf("%q attempt %d", tc.header, tc.attempt))
	}
}
