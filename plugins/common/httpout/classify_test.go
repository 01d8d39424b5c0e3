package httpout

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestClassify: each status gives the root package's error type, found with errors.As, with
// the server's wait, the reason, the 413 mark and unauthorized_retry_max_age's match.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status  int
		outcome morse.WriteOutcome
		class   Class
	}{
		{200, morse.OutcomeWritten, ClassStored},
		{204, morse.OutcomeWritten, ClassStored},
		{304, morse.OutcomeRetry, ClassRetry},
		{400, morse.OutcomeDropped, ClassRefused},
		{401, morse.OutcomeRetry, ClassRetry},
		{403, morse.OutcomeRetry, ClassRetry},
		{404, morse.OutcomeRetry, ClassRetry},
		{408, morse.OutcomeRetry, ClassRetry},
		{409, morse.OutcomeDropped, ClassRefused},
		{413, morse.OutcomeDropped, ClassTooLarge},
		{415, morse.OutcomeDropped, ClassRefused},
		{421, morse.OutcomeRetry, ClassRetry},
		{422, morse.OutcomeDropped, ClassRefused},
		{425, morse.OutcomeRetry, ClassRetry},
		{429, morse.OutcomeRetry, ClassRetry},
		{500, morse.OutcomeRetry, ClassRetry},
		{503, morse.OutcomeRetry, ClassRetry},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			require.Equal(t, tc.class, ClassOf(tc.status))
			serr := &StatusError{StatusCode: tc.status, URL: "http://db.example/write"}
			err := Classify(tc.status, http.Header{"Retry-After": {"7"}}, serr, "refused")
			require.Equal(t, tc.outcome, morse.Classify(err), "%v", err)
			if err == nil {
				return
			}
			require.ErrorIs(t, err, serr, "the output's own error is kept")
			require.Equal(t, Unauthorized(tc.status), errors.Is(err, morse.ErrUnauthorized))
			require.Equal(t, tc.class == ClassTooLarge, errors.Is(err, ErrTooLarge))
			switch tc.class {
			case ClassRetry:
				re, ok := errors.AsType[*morse.RetryableError](err)
				require.True(t, ok)
				require.Equal(t, 7*time.Second, re.RetryAfter)
			case ClassTooLarge:
				pe, ok := errors.AsType[*morse.PermanentError](err)
				require.True(t, ok)
				require.Equal(t, ReasonTooLarge, pe.Reason)
			case ClassRefused:
				pe, ok := errors.AsType[*morse.PermanentError](err)
				require.True(t, ok)
				require.Equal(t, "refused", pe.Reason)
			}
		})
	}
	require.Equal(t, "http://db.example/write: 503: Service Unavailable", (&StatusError{StatusCode: 503, URL: "http://db.example/write"}).Error())
	require.Equal(t, "u: 400: bad line", (&StatusError{StatusCode: 400, URL: "u", Message: "bad line"}).Error())
	require.Equal(t, "bad line", Message(400, "bad line"))
	require.Equal(t, "Request Entity Too Large", Message(413, ""), "nothing said: the status's text")
}

// TestNewStatusError: the message is the start of the answer's body, and the rest is drained
// so that the next request reuses the connection; an answer too long to drain is not.
func TestNewStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, " bad line "+strings.Repeat("x", n))
	}))
	defer srv.Close()
	tr, err := NewTransport(Options{})
	require.NoError(t, err)
	client := &http.Client{Transport: tr}
	get := func(n int) (*StatusError, bool) {
		var reused bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		})
		req, err := NewRequest(ctx, http.MethodPost, srv.URL+"/write?n="+strconv.Itoa(n), []byte("x"))
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		return NewStatusError("db", resp), reused
	}
	e, _ := get(0)
	require.Equal(t, &StatusError{StatusCode: 400, URL: "db", Message: "bad line"}, e)
	e, reused := get(100 << 10)
	require.True(t, reused, "the short answer before was drained")
	require.Len(t, e.Message, MaxMessage-1, "the body's first MaxMessage bytes, trimmed")
	_, reused = get(0)
	require.True(t, reused, "an answer of 100 KiB was drained")
	get(MaxMessage * 3)
	_, reused = get(0)
	require.False(t, reused, "an answer of 192 KiB was not")
	require.Empty(t, ReadAnswer(strings.NewReader("x"), 0))
}
