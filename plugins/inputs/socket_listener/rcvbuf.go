package socketlistener

import (
	"log/slog"
	"net"
)

// sizeReadBuffers sets the receive buffer of the datagram sockets: read_buffer_size when
// it is set, and otherwise as large as the kernel lets a process without privilege make
// it (net.core.rmem_max on Linux). A sender of datagrams cannot be slowed down: whatever
// arrives while the buffer is full is lost, and the system's default (208 KiB on Linux)
// fills in a few milliseconds of a flood, less than one time slice taken by another
// process. The effective size is logged once, as the kernel may cap what was asked.
func (s *SocketListener) sizeReadBuffers(conns []net.PacketConn) {
	if len(conns) == 0 {
		return
	}
	asked := int(s.ReadBufferSize)
	if asked <= 0 {
		// Never lower the system's default, should rmem_max be below it. Linux reports
		// twice the size set, and the default as it is.
		if limit := maxReadBuffer(); 2*limit > readBufferOf(conns[0]) {
			asked = limit
		}
	}
	if asked > 0 {
		for _, c := range conns {
			if err := c.(interface{ SetReadBuffer(int) error }).SetReadBuffer(asked); err != nil {
				s.ioLog.Log(s.log, slog.LevelWarn, "cannot set read_buffer_size", "error", err)
				break
			}
		}
	}
	if got := readBufferOf(conns[0]); got > 0 {
		s.log.Info("datagram receive buffer", "bytes", got, "asked", asked, "sockets", len(conns))
	}
}
