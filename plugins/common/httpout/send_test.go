package httpout

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestSend: a request reaches a real server with its body and the headers that header
// sets, and read gets the answer, whatever its status; a server that never answers is a
// transport error once the timeout has passed; a URL that refuses connections is one at
// once.
func TestSend(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/hang" {
			<-release
			return
		}
		w.Header().Set("X-Got", r.Header.Get("X-Sent")+" "+string(b))
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("no"))
	}))
	defer srv.Close()
	defer close(release)
	header := func(req *http.Request) { req.Header.Set("X-Sent", "h") }
	type answer struct{ status, got, body string }
	read := func(resp *http.Response) answer {
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the body is read within the bound")
		return answer{resp.Status, resp.Header.Get("X-Got"), string(b)}
	}
	a, err := Send(context.Background(), srv.Client(), srv.URL+"/write", []byte("cpu v=1"), time.Minute, header, read)
	require.NoError(t, err, "an answer, whatever its status, is no transport error")
	require.Equal(t, answer{"418 I'm a teapot", "h cpu v=1", "no"}, a)

	_, err = Send(context.Background(), srv.Client(), srv.URL+"/hang", []byte("x"), 50*time.Millisecond, header, read)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a server that never answers, bounded by the timeout")

	_, err = Send(context.Background(), srv.Client(), "http://"+testutil.FreeAddr(t)+"/write", nil, 0, header, read)
	require.Error(t, err, "nothing listens there")
}

// TestPost: the answer of the first URL that answers, with its index; a failover is logged
// with the URL that answered; when none answers, one error, retryable, names the output and
// every failure.
func TestPost(t *testing.T) {
	var f Failover
	var logs testutil.Logs
	names := []string{"http://a/write", "http://b/write"}
	name := func(i int) string { return names[i] }
	down := errors.New("connection refused")
	post := func(up ...bool) (string, int, error) {
		return Post(context.Background(), &f, "influxdb", len(up), name, logs.Logger, func(i int) (string, error) {
			if !up[i] {
				return "", down
			}
			return "answer of " + names[i], nil
		})
	}

	a, idx, err := post(true, true)
	require.NoError(t, err)
	require.Equal(t, "answer of http://a/write", a)
	require.Zero(t, idx)
	require.Empty(t, logs.All(), "no failover, nothing logged")

	a, idx, err = post(false, true)
	require.NoError(t, err)
	require.Equal(t, "answer of http://b/write", a)
	require.Equal(t, 1, idx)
	require.Equal(t, []string{"INFO writing to another URL after a connection failure url=http://b/write error=connection refused"}, logs.All())

	_, idx, err = post(false, false)
	require.Equal(t, -1, idx)
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.ErrorIs(t, err, down)
	require.EqualError(t, err, "influxdb: no URL answered: connection refused\nconnection refused")
}

// TestWriteTimeout: the bound of a write is timeout, never less than the batch writer's own
// default bound.
func TestWriteTimeout(t *testing.T) {
	require.Equal(t, batch.DefaultWriteTimeout, MinWriteTimeout)
	require.Equal(t, MinWriteTimeout, WriteTimeout(0))
	require.Equal(t, MinWriteTimeout, WriteTimeout(5*time.Second))
	require.Equal(t, 45*time.Second, WriteTimeout(45*time.Second))
}

// TestRedactURL: no part of the credentials is left, unlike url.URL.Redacted.
func TestRedactURL(t *testing.T) {
	u, err := url.Parse("https://user:secret@db.example:8086/prefix?org=o")
	require.NoError(t, err)
	require.Equal(t, "https://db.example:8086/prefix?org=o", RedactURL(u))
	require.Equal(t, "https://user:secret@db.example:8086/prefix?org=o", u.String(), "u is left as it is")
	require.Contains(t, u.Redacted(), "user")
}
