package testserver

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TCPRelay is a TCP proxy on 127.0.0.1 in front of a real server, for the faults that sit
// between a client and its server: a connection cut in the middle of a stream, a proxy that
// accepts connections while the server behind it is down (as Docker's port proxy and
// HAProxy do), and TLS terminated in front of a server that speaks plain TCP (as stunnel or
// a load balancer does). Bytes pass through unchanged.
type TCPRelay struct {
	ln       net.Listener
	target   string
	down     atomic.Bool
	accepted atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{} // both sides of every relayed connection
	wg    sync.WaitGroup
}

// StartTCPRelay listens on a free loopback port and relays each connection to target
// (host:port, or "unix:" and a socket's path). With tlsCfg, it terminates TLS with it and relays the plain bytes. It is
// closed when the test ends.
func StartTCPRelay(t testing.TB, target string, tlsCfg *tls.Config) *TCPRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	r := &TCPRelay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.accept)
	t.Cleanup(r.close)
	return r
}

// Addr is the relay's address, 127.0.0.1:PORT.
func (r *TCPRelay) Addr() string { return r.ln.Addr().String() }

// Accepted is how many connections the relay has accepted.
func (r *TCPRelay) Accepted() int64 { return r.accepted.Load() }

// WaitRelayed waits until the relay relays n connections. A client's dial returns once the
// kernel has taken its connection, which may be before the relay has: a Cut in between
// would miss it.
func (r *TCPRelay) WaitRelayed(t testing.TB, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.conns) == 2*n
	}, 10*time.Second, 5*time.Millisecond, "the relay never relayed %d connections", n)
}

// SetDown makes the relay behave as a proxy whose server is down: it accepts each new
// connection and closes it at once. SetDown(false) relays again.
func (r *TCPRelay) SetDown(down bool) { r.down.Store(down) }

// Cut closes every connection relayed so far, on both sides, as a dropped network path or a
// restarted proxy would.
func (r *TCPRelay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		_ = c.Close()
	}
	clear(r.conns)
}

func (r *TCPRelay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.accepted.Add(1)
		if r.down.Load() {
			_ = c.Close()
			continue
		}
		network, addr := "tcp", r.target
		if path, ok := strings.CutPrefix(r.target, "unix:"); ok {
			network, addr = "unix", path
		}
		s, err := net.Dial(network, addr)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		r.conns[c], r.conns[s] = struct{}{}, struct{}{}
		r.mu.Unlock()
		r.wg.Go(func() { r.pipe(s, c) })
		r.wg.Go(func() { r.pipe(c, s) })
	}
}

// pipe copies src to dst until either side ends, then closes both.
func (r *TCPRelay) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	r.mu.Lock()
	delete(r.conns, dst)
	delete(r.conns, src)
	r.mu.Unlock()
}

func (r *TCPRelay) close() {
	_ = r.ln.Close()
	r.Cut()
	r.wg.Wait()
}
