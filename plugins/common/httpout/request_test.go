package httpout

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writes counts the writes made to a connection.
type writes struct {
	net.Conn
	n   int
	buf bytes.Buffer
}

func (w *writes) Write(p []byte) (int, error) { w.n++; return w.buf.Write(p) }

func TestConnWritesABodyWhole(t *testing.T) {
	body := bytes.Repeat([]byte("cpu,host=a usage=1\n"), 20_000) // 380 KB
	for _, tc := range []struct {
		name        string
		limit       int64
		wantWrites  int
		wantWritten int
		reader      func() io.Reader
	}{
		{"a Body within the limit: one write", int64(len(body)), 1, len(body), func() io.Reader { return newBody(body) }},
		{"a Body longer than the limit: only the limit", 1000, 1, 1000, func() io.Reader { return newBody(body) }},
		{"another reader: copied as before", int64(len(body)), 12, len(body), func() io.Reader { return io.MultiReader(bytes.NewReader(body)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writes{}
			lr := &io.LimitedReader{R: tc.reader(), N: tc.limit}
			n, err := conn{w}.ReadFrom(lr)
			require.NoError(t, err)
			require.Equal(t, int64(tc.wantWritten), n)
			require.Equal(t, body[:tc.wantWritten], w.buf.Bytes())
			require.Equal(t, tc.limit-n, lr.N)
			require.Equal(t, tc.wantWrites, w.n)
		})
	}
}

// TestNewRequestThroughTheTransport: a body reaches a real server whole, with its length,
// and again after a redirect that replays it through GetBody.
func TestNewRequestThroughTheTransport(t *testing.T) {
	body := bytes.Repeat([]byte("cpu,host=a usage=1\n"), 20_000)
	var got [][]byte
	var lengths []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		got, lengths = append(got, b), append(lengths, r.ContentLength)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/write", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	tr, err := NewTransport(Options{})
	require.NoError(t, err)
	client := &http.Client{Transport: tr}
	for _, path := range []string{"/write", "/moved"} {
		req, err := NewRequest(context.Background(), http.MethodPost, srv.URL+path, body)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		require.NoError(t, resp.Body.Close())
	}
	require.Len(t, got, 3, "one request, then one redirected")
	for i, b := range got {
		require.Equal(t, body, b, "request %d", i)
		require.Equal(t, int64(len(body)), lengths[i])
	}

	req, err := NewRequest(context.Background(), http.MethodPost, srv.URL+"/write", nil)
	require.NoError(t, err)
	require.Equal(t, http.NoBody, req.Body, "an empty body is none")
}

// TestHeadersAndAuth: what a server receives from SetHeaders and Auth: the configured
// headers over those set before, Host as the request's host, a token over basic auth, basic
// auth with only a password, and nothing from the zero Auth.
func TestHeadersAndAuth(t *testing.T) {
	type got struct {
		host, auth, custom, ctype string
	}
	seen := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- got{r.Host, r.Header.Get("Authorization"), r.Header.Get("X-Custom"), r.Header.Get("Content-Type")}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	send := func(auth Auth, headers map[string]string) got {
		req, err := NewRequest(context.Background(), http.MethodPost, srv.URL+"/write", []byte("x"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		auth.Set(req)
		SetHeaders(req, headers)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return <-seen
	}
	g := send(Auth{Username: "u", Password: "p", Scheme: "Token", Token: "t"},
		map[string]string{"host": "db.example", "X-Custom": "v", "content-type": "application/json"})
	require.Equal(t, got{"db.example", "Token t", "v", "application/json"}, g)

	g = send(Auth{Password: "p"}, nil)
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte(":p")), g.auth)
	require.Equal(t, strings.TrimPrefix(srv.URL, "http://"), g.host)

	g = send(Auth{Scheme: "Bearer"}, map[string]string{"Authorization": "Custom c"})
	require.Equal(t, "Custom c", g.auth, "no credentials set: a configured header goes through")
	g = send(Auth{}, nil)
	require.Empty(t, g.auth)
}
