package influxdbv2

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// connected returns an output writing to url and bucket "b", changed by mods, after Init
// and Connect.
func connected(t testing.TB, url string, mods ...func(*InfluxDBv2)) *InfluxDBv2 {
	t.Helper()
	o := New()
	o.URLs = []string{url}
	o.Bucket = "b"
	for _, m := range mods {
		m(o)
	}
	o.SetLogger(testutil.QuietLogger())
	require.NoError(t, o.Init())
	require.NoError(t, o.Connect(testutil.Context(t)))
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// metric builds a metric; fields keep the types given (float64, int64, uint64, string, bool).
func metric(t testing.TB, name string, tags map[string]string, fields map[string]any, ts time.Time) morse.Metric {
	t.Helper()
	m, skipped := morse.NewMetricFromMaps(name, tags, fields, ts)
	require.Zero(t, skipped, "metric %s: a field of an unsupported type", name)
	return m
}

// request is what a recording proxy saw of one write.
type request struct {
	bucket, org, encoding, auth string
	lines                       []string
	status                      int
}

// recorder records every write request it sees, decompressed, before handing it to next: a
// real server behind a recording proxy, or a fake sink's answers.
type recorder struct {
	t    testing.TB
	next http.Handler
	mu   sync.Mutex
	reqs []request
}

// record starts a recorder on a free loopback port in front of next and returns its URL.
func record(t testing.TB, next http.Handler) (*recorder, string) {
	r := &recorder{t: t, next: next}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// proxyTo forwards to a real server at base.
func proxyTo(t testing.TB, base string) http.Handler {
	u, err := url.Parse(base)
	require.NoError(t, err)
	return httputil.NewSingleHostReverseProxy(u)
}

// ServeHTTP records the request and lets next answer it.
func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	require.NoError(r.t, err)
	plain := body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(r.t, err)
		plain, err = io.ReadAll(zr)
		require.NoError(r.t, err)
	}
	q := req.URL.Query()
	rec := request{bucket: q.Get("bucket"), org: q.Get("org"), encoding: req.Header.Get("Content-Encoding"),
		auth: req.Header.Get("Authorization"), lines: splitLines(plain)}
	req.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	r.next.ServeHTTP(sw, req)
	rec.status = sw.status
	r.mu.Lock()
	r.reqs = append(r.reqs, rec)
	r.mu.Unlock()
}

// requests returns the requests seen so far.
func (r *recorder) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func splitLines(b []byte) []string {
	var out []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out
}
