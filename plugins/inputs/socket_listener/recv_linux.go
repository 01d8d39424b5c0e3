//go:build linux

package socketlistener

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchSys holds a batch's recvmmsg headers, set up once to point at its buffers. x/net's
// ReadBatch built every header anew and parsed every sender's address on each call: under
// a flood of small datagrams that was a tenth of the listener's time, most of it for
// addresses that only a log line ever needs.
type batchSys struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrAny
	// read makes the recvmmsg call for rc.Read. It is built once, so that a read allocates
	// nothing, and leaves its result in n and errno.
	read  func(fd uintptr) bool
	n     int
	errno syscall.Errno
	// nowait makes read return at once, with n = 0, when no datagram is waiting.
	nowait bool
}

func (s *batchSys) init(b *batch) {
	s.hdrs = make([]unix.Mmsghdr, len(b.bufs))
	s.iovs = make([]unix.Iovec, len(b.bufs))
	s.names = make([]unix.RawSockaddrAny, len(b.bufs))
	for i, buf := range b.bufs {
		s.iovs[i].Base = &buf[0]
		s.iovs[i].SetLen(len(buf))
		h := &s.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
	}
	s.read = s.recvmmsg
}

// recvmmsg reads as many datagrams as are waiting, up to the batch's size. It reports
// false when none is, so that rc.Read waits until the socket is readable.
func (s *batchSys) recvmmsg(fd uintptr) bool {
	for i := range s.hdrs {
		s.hdrs[i].Hdr.Namelen = unix.SizeofSockaddrAny // the kernel sets it to the name's length
	}
	for {
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[0])),
			uintptr(len(s.hdrs)), 0, 0, 0)
		switch errno {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if s.nowait {
				s.n, s.errno = 0, 0
				return true
			}
			return false
		}
		s.n, s.errno = int(r), errno
		return true
	}
}

// batchReader returns how c reads a batch: one recvmmsg call for a socket that exposes its
// descriptor, as UDP and unix datagram sockets do, and one datagram a call otherwise.
func batchReader(c net.PacketConn) func(b *batch) (int, error) {
	if read := recvmmsgReader(c, false); read != nil {
		return read
	}
	return readOne(c)
}

// batchPoller returns how c reads a batch without waiting: a read returns 0 datagrams when
// none is waiting. It is nil for a socket that does not expose its descriptor.
func batchPoller(c net.PacketConn) func(b *batch) (int, error) {
	return recvmmsgReader(c, true)
}

// recvmmsgReader reads a batch with one recvmmsg call, or returns nil for a socket that does
// not expose its descriptor.
func recvmmsgReader(c net.PacketConn, nowait bool) func(b *batch) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(b *batch) (int, error) {
		s := &b.sys
		s.nowait = nowait
		if err := rc.Read(s.read); err != nil {
			return 0, err
		}
		if s.errno != 0 {
			return 0, os.NewSyscallError("recvmmsg", s.errno)
		}
		for i := range s.n {
			b.sizes[i], b.from[i] = int(s.hdrs[i].Len), nil
			if s.hdrs[i].Hdr.Flags&unix.MSG_TRUNC != 0 {
				b.sizes[i] = truncated
			}
		}
		return s.n, nil
	}
}

// addr returns the sender of datagram i, as the last recvmmsg call named it, or nil for an
// unnamed unix socket.
func (s *batchSys) addr(i int) net.Addr {
	if i >= len(s.names) {
		return nil
	}
	return sockaddrOf(&s.names[i], int(s.hdrs[i].Hdr.Namelen))
}

// name returns the raw sender name of datagram i, namelen bytes as the kernel wrote them.
func (s *batchSys) name(i int) []byte {
	n := min(int(s.hdrs[i].Hdr.Namelen), unix.SizeofSockaddrAny)
	return (*[unix.SizeofSockaddrAny]byte)(unsafe.Pointer(&s.names[i]))[:n]
}

// addrOfName turns a raw sender name, as name returned it, into an address.
func addrOfName(name []byte) net.Addr {
	var rsa unix.RawSockaddrAny
	n := copy((*[unix.SizeofSockaddrAny]byte)(unsafe.Pointer(&rsa))[:], name)
	return sockaddrOf(&rsa, n)
}

// sockaddrOf turns a raw socket address of namelen bytes into an address; nil for an
// unnamed unix socket or a family it does not know.
func sockaddrOf(rsa *unix.RawSockaddrAny, namelen int) net.Addr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return &net.UDPAddr{IP: net.IP(append([]byte(nil), p.Addr[:]...)), Port: netPort(&p.Port)}
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		a := &net.UDPAddr{IP: net.IP(append([]byte(nil), p.Addr[:]...)), Port: netPort(&p.Port)}
		if p.Scope_id != 0 {
			a.Zone = strconv.FormatUint(uint64(p.Scope_id), 10)
		}
		return a
	case unix.AF_UNIX:
		p := (*unix.RawSockaddrUnix)(unsafe.Pointer(rsa))
		n := namelen - int(unsafe.Offsetof(p.Path))
		if n <= 0 {
			return nil
		}
		path := make([]byte, 0, n)
		for _, c := range p.Path[:min(n, len(p.Path))] {
			if c == 0 {
				break
			}
			path = append(path, byte(c))
		}
		return &net.UnixAddr{Name: string(path), Net: "unixgram"}
	}
	return nil
}

// netPort reads a port stored in network byte order.
func netPort(p *uint16) int {
	return int(binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(p))[:]))
}

// rmemMax is where Linux keeps the largest receive buffer a process may set without
// CAP_NET_ADMIN (SO_RCVBUFFORCE goes past it; morse never asks for that).
var rmemMax = "/proc/sys/net/core/rmem_max"

// maxReadBuffer is the largest size this process may pass to SetReadBuffer, 0 when it
// cannot be read.
func maxReadBuffer() int {
	b, err := os.ReadFile(rmemMax)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// readBufferOf is the socket's receive buffer as the kernel reports it: what the socket's
// queue may hold, the kernel's bookkeeping of each datagram included, which for a size set
// with SetReadBuffer is twice that size. 0 when it cannot be read.
func readBufferOf(c net.PacketConn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		n, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	}); err != nil || gerr != nil {
		return 0
	}
	return n
}
