package testutil

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStatusKiB(t *testing.T) {
	status := []byte("Name:\tmorse\nVmPeak:\t  100 kB\nVmHWM:\t   4242 kB\nVmRSS:\t  4000 kB\nThreads:\t7\n")
	n, err := parseStatusKiB(status, []string{"VmRSS", "VmHWM"})
	require.NoError(t, err)
	require.Equal(t, []int64{4000, 4242}, n, "in the order of the keys")
	_, err = parseStatusKiB(status, []string{"VmHWM", "RssAnon"})
	require.ErrorContains(t, err, "no RssAnon")
}

func TestStatusKiBOfThisProcess(t *testing.T) {
	self, err := StatusKiB(0, "VmHWM", "VmRSS")
	require.NoError(t, err)
	require.Positive(t, self[1])
	require.GreaterOrEqual(t, self[0], self[1], "the peak is at least the resident size")
	_, err = StatusKiB(-1, "VmRSS")
	require.Error(t, err, "no process has PID -1")
}

func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	for _, network := range []string{"tcp", "udp"} {
		ports, err := FreePorts(network, 3)
		require.NoError(t, err)
		require.Len(t, ports, 3)
		seen := map[int]bool{}
		for _, p := range ports {
			require.False(t, seen[p], "%s port %d twice", network, p)
			seen[p] = true
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
			if network == "udp" {
				pc, err := net.ListenPacket("udp", addr)
				require.NoError(t, err)
				require.NoError(t, pc.Close())
				continue
			}
			ln, err := net.Listen("tcp", addr)
			require.NoError(t, err)
			require.NoError(t, ln.Close())
		}
	}
	_, err := FreePorts("unix", 1)
	require.Error(t, err)
	ln, err := net.Listen("tcp", FreeAddr(t))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}
