package testutil

import (
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RaiseNoFile raises the process's open-file limit (RLIMIT_NOFILE) to at least n for the
// rest of the test, the hard limit too when it is lower, and puts both back when the test
// ends. Go raises the soft limit to the hard one when a program starts, so this matters
// only where the hard limit is below n.
func RaiseNoFile(t testing.TB, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	if old.Cur >= n {
		return
	}
	// Only a hard limit below n is raised: that needs CAP_SYS_RESOURCE, which a container
	// may deny even to root.
	lim := syscall.Rlimit{Cur: n, Max: max(old.Max, n)}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim),
		"raising RLIMIT_NOFILE from %d (hard %d) to %d", old.Cur, old.Max, n)
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// Flood opens n TCP connections to addr, as fast as the listener accepts them, writes
// prefix on each (nothing when it is empty) and leaves them open, sending nothing more, as
// a client that wants to exhaust a listener's connections would. They are closed when the
// test ends. A write that fails because the listener already closed the connection is what
// the flood is for and not an error; a dial that fails is.
func Flood(t testing.TB, addr string, n int, prefix []byte) {
	t.Helper()
	conns := make([]net.Conn, n)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	})
	const dialers = 32
	errs := make(chan error, dialers)
	var wg sync.WaitGroup
	for w := range dialers {
		wg.Go(func() {
			d := net.Dialer{Timeout: 30 * time.Second}
			for i := w; i < n; i += dialers {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
				if len(prefix) > 0 {
					_, _ = c.Write(prefix)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "opening %d connections to %s", n, addr)
	}
}
