package testserver

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Recorder is a reverse proxy on 127.0.0.1 in front of a real server that keeps a copy of
// every request, body included. A test checks what a client sent, while the answers stay
// the real server's.
type Recorder struct {
	url    string
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
}

// StartRecorder starts a Recorder in front of target (a base URL such as Influx.URL()). It
// is closed when the test ends.
func StartRecorder(t testing.TB, target string) *Recorder {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	rec := &Recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Clone(r.Context()))
		rec.bodies = append(rec.bodies, body)
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.url = srv.URL
	return rec
}

// URL is the recorder's base URL, http://127.0.0.1:PORT.
func (r *Recorder) URL() string { return r.url }

// Requests returns the requests so far, in order. Each has a body of its own to read, so
// that, for example, ParseForm works.
func (r *Recorder) Requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*http.Request, len(r.reqs))
	for i, req := range r.reqs {
		c := req.Clone(req.Context())
		c.Body = io.NopCloser(bytes.NewReader(r.bodies[i]))
		out[i] = c
	}
	return out
}
