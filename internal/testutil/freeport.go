package testutil

import (
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// FreePorts returns n distinct ports of 127.0.0.1 that are free for network ("tcp" or
// "udp"), for servers that a test or a benchmark harness starts next and that must be told
// their port. Each port is held until all are chosen, so that the kernel does not hand out
// one port twice, then let go: another process could take one before the server binds it,
// and the server then fails to start and says so. It is the one free-port helper of the
// tests, internal/testserver and bench/.
func FreePorts(network string, n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		var (
			c    io.Closer
			port int
		)
		switch network {
		case "udp":
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				return nil, fmt.Errorf("find a free udp port: %w", err)
			}
			c, port = pc, pc.LocalAddr().(*net.UDPAddr).Port
		case "tcp":
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, fmt.Errorf("find a free tcp port: %w", err)
			}
			c, port = ln, ln.Addr().(*net.TCPAddr).Port
		default:
			return nil, fmt.Errorf("find a free port: network %q is neither tcp nor udp", network)
		}
		defer c.Close()
		ports = append(ports, port)
	}
	return ports, nil
}

// FreeAddr returns 127.0.0.1:PORT with a TCP port that is free (FreePorts), for a listener
// the test starts later, and fails the test if there is none.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ports, err := FreePorts("tcp", 1)
	require.NoError(tb, err)
	return fmt.Sprintf("127.0.0.1:%d", ports[0])
}
