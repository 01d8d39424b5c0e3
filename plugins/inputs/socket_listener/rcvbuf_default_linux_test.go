package socketlistener

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// procInt reads an integer from a file under /proc/sys.
func procInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return n
}

// TestUDPReadBufferDefaultsToTheKernelsLimit: with read_buffer_size unset, every UDP socket
// gets the largest receive buffer the kernel allows without privilege, and the size is
// logged once.
func TestUDPReadBufferDefaultsToTheKernelsLimit(t *testing.T) {
	// Linux reports twice the size set, and the default as it is.
	want := max(2*procInt(t, "/proc/sys/net/core/rmem_max"), procInt(t, "/proc/sys/net/core/rmem_default"))
	var logs bytes.Buffer
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) { s.UDPReceivers = 2 })
	s.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	start(t, s)
	for _, c := range s.srv.(*packetServer).conns {
		require.Equal(t, want, readBufferOf(c))
	}
	require.Equal(t, 1, strings.Count(logs.String(), "datagram receive buffer"), logs.String())
	require.Contains(t, logs.String(), "bytes="+strconv.Itoa(want))
}

// TestUDPReadBufferIsNeverLoweredBelowTheSystemsDefault: a kernel limit below the default
// leaves the default.
func TestUDPReadBufferIsNeverLoweredBelowTheSystemsDefault(t *testing.T) {
	def := procInt(t, "/proc/sys/net/core/rmem_default")
	fake := filepath.Join(t.TempDir(), "rmem_max")
	require.NoError(t, os.WriteFile(fake, []byte(strconv.Itoa(def/4)+"\n"), 0o600))
	old := rmemMax
	rmemMax = fake
	t.Cleanup(func() { rmemMax = old })
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	s := newListener(t, "udp://127.0.0.1:0")
	require.NoError(t, s.setup())
	s.sizeReadBuffers([]net.PacketConn{pc})
	require.Equal(t, def, readBufferOf(pc))
	require.Equal(t, def/4, maxReadBuffer())
}
