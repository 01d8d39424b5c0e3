package questdb

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/stretchr/testify/require"
)

// TestAnswersNoLocalServerGives covers, with a fake /write beside the real-server tests, the
// answers a local QuestDB 9.1.0 does not give on demand: a request too large, an overloaded
// or failing server, a proxy's 404, a 400 that names no line. Bodies follow QuestDB's error
// JSON as the real server sends it.
func TestAnswersNoLocalServerGives(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(body []byte) (int, string, http.Header)
		outcome morse.WriteOutcome
		after   time.Duration // Retry-After, for a retry
		reason  string        // for a drop
		posts   int
	}{
		{
			name: "413 for more than 2 lines: sent in halves",
			answer: func(b []byte) (int, string, http.Header) {
				if bytes.Count(b, []byte("\n")) > 2 {
					return 413, `{"code":"request too large","message":"transaction is too large","line":0,"errorId":"x-1"}`, nil
				}
				return 204, "", nil
			},
			outcome: morse.OutcomeWritten, posts: 1 + 2 + 4,
		},
		{
			name:    "413 for one line: dropped",
			answer:  func([]byte) (int, string, http.Header) { return 413, "", nil },
			outcome: morse.OutcomePartial, reason: ReasonTooLarge, posts: 1 + 2 + 4 + 8,
		},
		{
			name: "503 with Retry-After",
			answer: func([]byte) (int, string, http.Header) {
				return 503, "busy", http.Header{"Retry-After": {"7"}}
			},
			outcome: morse.OutcomeRetry, after: 7 * time.Second, posts: 1,
		},
		{
			// 9.3e9 s is past what a time.Duration holds: the wait is capped, not overflowed
			// into none.
			name: "503 with a Retry-After too long for a Duration",
			answer: func([]byte) (int, string, http.Header) {
				return 503, "busy", http.Header{"Retry-After": {"9300000000"}}
			},
			outcome: morse.OutcomeRetry, after: httpout.MaxRetryAfter, posts: 1,
		},
		{
			name: "500",
			answer: func([]byte) (int, string, http.Header) {
				return 500, `{"code":"internal error","message":"disk full"}`, nil
			},
			outcome: morse.OutcomeRetry, posts: 1,
		},
		{
			name:    "401",
			answer:  func([]byte) (int, string, http.Header) { return 401, "", nil },
			outcome: morse.OutcomeRetry, posts: 1,
		},
		{
			name: "421 from a read-only server or a replica",
			answer: func([]byte) (int, string, http.Header) {
				return 421, `{"code":"misdirected request","message":"not accepting writes"}`, nil
			},
			outcome: morse.OutcomeRetry, posts: 1,
		},
		{
			name: "a table that does not exist, on a server that does not create tables",
			answer: func([]byte) (int, string, http.Header) {
				return 400, `{"code":"invalid","message":"failed to parse line protocol:errors encountered on line(s):\nerror in line 1: table: fake; table does not exist, creating new tables is disabled","line":1,"errorId":"a0e917dcefd8-3"}`, nil
			},
			outcome: morse.OutcomePartial, reason: ReasonTableNotFound, posts: 1,
		},
		{
			name:    "a proxy's 404",
			answer:  func([]byte) (int, string, http.Header) { return 404, "<html>not found</html>", nil },
			outcome: morse.OutcomeRetry, posts: 1,
		},
		{
			name: "400 naming no line",
			answer: func([]byte) (int, string, http.Header) {
				return 400, `{"code":"not supported","message":"failed to parse line protocol:errors encountered on line(s):unsupported precision","line":0,"errorId":"x-2"}`, nil
			},
			outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, posts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			posts := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.Equal(t, "/write", r.URL.Path)
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				posts++
				mu.Unlock()
				status, text, h := tt.answer(body)
				for k, v := range h {
					w.Header()[k] = v
				}
				if strings.HasPrefix(text, "{") {
					w.Header().Set("Content-Type", "application/json; charset=utf-8")
				}
				w.WriteHeader(status)
				_, _ = io.WriteString(w, text)
			}))
			defer srv.Close()
			o := New()
			o.Addr = strings.TrimPrefix(srv.URL, "http://")
			require.NoError(t, o.Init())
			err := write(t, o, rows("fake", 0, 8, now))
			require.Equal(t, tt.outcome, morse.Classify(err), "%v", err)
			var re *morse.RetryableError
			if tt.after > 0 {
				require.True(t, errors.As(err, &re))
				require.Equal(t, tt.after, re.RetryAfter)
			}
			if tt.reason != "" {
				requireDropped(t, err, 8, tt.reason, 0, 1, 2, 3, 4, 5, 6, 7)
			}
			if tt.name == "401" {
				require.ErrorIs(t, err, morse.ErrUnauthorized, "unauthorized_retry_max_age applies")
			}
			var se *ServerError
			if err != nil {
				require.True(t, errors.As(err, &se), "%v", err)
			}
			require.Equal(t, tt.posts, posts)
		})
	}
}

// TestCastVerdicts: a cast error takes out every line that writes the same type to the
// column, but one from STRING only its own line, since whether a string goes into a UUID,
// IPV4 or CHAR column depends on the string.
func TestCastVerdicts(t *testing.T) {
	msg := func(from, to string) string {
		return "failed to parse line protocol:errors encountered on line(s):\nerror in line 2: table: t, column: c; cast error from protocol type: " +
			from + " to column type: " + to
	}
	tests := []struct {
		from, to, column string
	}{
		{"LONG", "DOUBLE", "c"},
		{"DOUBLE", "LONG", "c"},
		{"STRING", "UUID", ""},
		{"STRING", "IPV4", ""},
		{"STRING", "LONG", ""},
	}
	for _, tt := range tests {
		v := (&ServerError{StatusCode: 400, Line: 2, Message: msg(tt.from, tt.to)}).verdict()
		require.Equal(t, 2, v.line)
		require.Equal(t, morse.ReasonFieldTypeConflict, v.reason)
		require.Equal(t, tt.column, v.column, "%s to %s", tt.from, tt.to)
	}
}

// TestLineReasons: the reason of a line QuestDB 9.1.0 names, from its own messages.
func TestLineReasons(t *testing.T) {
	for msg, want := range map[string]string{
		"error in line 1: table: tb, column: b; line protocol value: 300 is out bounds of column type: BYTE": ReasonUnsupportedValue,
		"error in line 2: table: t, column: c; cast error from protocol type: LONG to column type: DOUBLE":   morse.ReasonFieldTypeConflict,
		"error in line 1: Could not parse entire line, field value is invalid":                               morse.ReasonUnableToParse,
	} {
		require.Equal(t, want, lineReason(msg), msg)
	}
}
