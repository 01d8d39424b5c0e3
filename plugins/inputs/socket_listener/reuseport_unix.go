//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package socketlistener

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// canReusePort reports that several sockets may share one UDP port on this system.
const canReusePort = true

// reusePort sets SO_REUSEPORT before bind, so that several receivers can bind one UDP port
// and the kernel spreads the senders over them. Only sockets of the same user may join,
// so another user's process cannot take a share of the traffic.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
