package socketlistener

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/morse-agent/morse"
)

// TestReadBufferSizeSetsSORCVBUF checks the receive buffer of every UDP socket. Linux
// reports twice the size asked for, for its own bookkeeping.
func TestReadBufferSizeSetsSORCVBUF(t *testing.T) {
	const size = 96 << 10 // below the default net.core.rmem_max, which caps it
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) {
		s.UDPReceivers, s.ReadBufferSize = 2, morse.Size(size)
	})
	start(t, s)
	for _, c := range s.srv.(*packetServer).conns {
		raw, err := c.(*net.UDPConn).SyscallConn()
		require.NoError(t, err)
		var got int
		require.NoError(t, raw.Control(func(fd uintptr) {
			got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		}))
		require.NoError(t, err)
		require.Equal(t, 2*size, got)
	}
}
