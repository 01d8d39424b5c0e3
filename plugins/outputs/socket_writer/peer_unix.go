//go:build unix

package socketwriter

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
	"time"
)

// peerClosed reports whether the peer of a stream has closed it (or reset it), without
// waiting: it peeks at the socket. A Read with a deadline in the past cannot tell, because
// Go returns its timeout before it asks the kernel. Bytes that wait in front of a close
// would hide it from a peek, so they are read: through TLS, which may have sent them, and
// otherwise discarded, since a listener has nothing to say.
func peerClosed(c net.Conn) bool {
	raw := c
	tc, isTLS := c.(*tls.Conn)
	if isTLS {
		raw = tc.NetConn()
	}
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var n int
	var rerr error
	var one [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait: the answer is whatever the kernel has now
	})
	switch {
	case err != nil:
		return true
	case errors.Is(rerr, syscall.EAGAIN):
		return false // open, and nothing to read
	case rerr != nil:
		return true // reset
	case n == 0:
		return true // end of stream
	case isTLS:
		// Bytes wait, which a listener never sends, but TLS does: a session ticket after
		// the handshake, or the close_notify before the end of stream. TLS reads them.
		return tlsClosed(tc)
	}
	return discardClosed(rc)
}

// discardClosed reads and drops what waits on a plain stream, without waiting, and reports
// whether the stream ended (or failed) behind it.
func discardClosed(rc syscall.RawConn) bool {
	var buf [4096]byte
	closed := false
	err := rc.Read(func(fd uintptr) bool {
		for range 256 { // at most 1 MiB a look; the next look reads on
			n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_DONTWAIT)
			if errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EINTR) {
				return true
			}
			if rerr != nil || n == 0 {
				closed = true
				return true
			}
		}
		return true
	})
	return closed || err != nil
}

// tlsClosed reads what waits on a TLS connection, briefly: a session ticket is handled and
// the read times out (open); a close_notify ends it (closed).
func tlsClosed(tc *tls.Conn) bool {
	var one [1]byte
	_ = tc.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := tc.Read(one[:])
	_ = tc.SetReadDeadline(time.Time{})
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return false
	}
	return err != nil
}
