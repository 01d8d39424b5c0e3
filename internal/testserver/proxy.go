package testserver

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Proxy is an HTTP proxy on 127.0.0.1 in front of a server, for outage tests with a fixed
// address: a restarted container would get a new mapped port, a proxy keeps its own.
//
// While cut, it closes the connection of every request before forwarding it, as an
// unreachable server would, and counts those attempts, so a test can tell a client that
// backs off from one that retries in a tight loop. A request that was already forwarded
// when the cut came completes normally. So every write either reached the server with its
// answer delivered, or never reached it: a test can then account for each metric exactly,
// which a cut in the middle of an exchange would make impossible.
type Proxy struct {
	srv      *http.Server
	ln       net.Listener
	cut      atomic.Bool
	requests atomic.Int64 // every request a client sent
	refused  atomic.Int64 // requests closed unanswered because the proxy was cut
	stored   atomic.Int64 // lines of /write bodies the server answered 2xx for
	delay    atomic.Int64 // nanoseconds each forwarded request waits first: a slow sink
}

// StartProxy listens on a free loopback port and forwards to target (host:port). It is
// closed when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &Proxy{ln: ln}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	p.srv = &http.Server{Handler: p.handler(rp)}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

func (p *Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if !p.cut.Load() {
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d) // a slow server; the client's own timeout still applies
			}
			p.forward(next, w, r)
			return
		}
		p.refused.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close() // the client sees the connection end without an answer
			return
		}
		panic(http.ErrAbortHandler) // net/http closes the connection unanswered
	})
}

// forward passes the request on and, for a /write the server answered 2xx, counts its
// lines: a test that knows what was sent can then count what was written twice.
func (p *Proxy) forward(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/write") || r.Header.Get("Content-Encoding") != "" {
		next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	if sw.status/100 == 2 {
		p.stored.Add(int64(bytes.Count(body, []byte("\n"))))
	}
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Stored is how many lines of uncompressed /write bodies the server answered 2xx for,
// repeats included.
func (p *Proxy) Stored() int64 { return p.stored.Load() }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address as an http URL.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// SetDelay makes every request forwarded from now on wait d before it reaches the server,
// as a server that takes d per write would; zero forwards at once.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Cut makes every new request fail without reaching the server, until Restore.
func (p *Proxy) Cut() { p.cut.Store(true) }

// Restore forwards requests again.
func (p *Proxy) Restore() { p.cut.Store(false) }

// Requests is the number of requests clients have sent so far.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Refused is the number of requests closed unanswered while the proxy was cut.
func (p *Proxy) Refused() int64 { return p.refused.Load() }
