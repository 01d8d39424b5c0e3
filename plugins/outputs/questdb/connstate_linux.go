package questdb

import (
	"net"
	"syscall"
	"unsafe"
)

// connState looks at the socket without blocking: whether there is anything to read (a
// close, an error, or bytes: QuestDB never sends any on ILP, but TLS may), and how many
// bytes written to it the peer has not yet acknowledged (SIOCOUTQ).
func connState(c *net.TCPConn) (readable bool, queued int, err error) {
	if c == nil {
		return true, 0, nil
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return false, 0, err
	}
	cerr := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		readable = n > 0 || n == 0 && rerr == nil || rerr != nil && rerr != syscall.EAGAIN && rerr != syscall.EINTR
		var q int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&q))); e == 0 {
			queued = int(q)
		}
	})
	if cerr != nil {
		return true, 0, nil
	}
	return readable, queued, nil
}
