//go:build !linux

package questdb

import (
	"net"
	"time"
)

// connState is the portable stand-in for the Linux version: it cannot see the send queue,
// so it reports it empty, and it notices a close by a short read.
func connState(c *net.TCPConn) (closed bool, queued int, err error) {
	if c == nil {
		return true, 0, nil
	}
	return closedWithin(c, time.Now().Add(time.Millisecond)), 0, nil
}
