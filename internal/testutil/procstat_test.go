package testutil

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	line := "8369 (odd) name)) R 8365 8365 32305 0 -1 4194304 99 0 0 0 1234 56 0 0 20 0 1 0 273953 3133440 382"
	u, s, err := parseStat(line)
	require.NoError(t, err)
	require.Equal(t, uint64(1234), u)
	require.Equal(t, uint64(56), s)
	_, _, err = parseStat("garbage")
	require.Error(t, err)
}

func TestProcCPUOfThisProcess(t *testing.T) {
	// Burn a few ticks so that the reading cannot be zero.
	cpu0 := CPUTime(t)
	for CPUTime(t)-cpu0 < 3*ClockTick {
	}
	cpu, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, cpu)
	_, err = ProcCPU(-1)
	require.Error(t, err, "no process has PID -1")
}

func TestParseNetUDP(t *testing.T) {
	table := `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  100: 0100007F:1F90 00000000:0000 07 00000000:00000200 00:00000000 00000000     0        0 1001 2 0000000000000000 5
  101: 0100007F:1F90 00000000:0000 07 00000000:00000100 00:00000000 00000000     0        0 1002 2 0000000000000000 7
  102: 0100007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1003 2 0000000000000000 9
`
	s, err := parseNetUDP(table, 8080)
	require.NoError(t, err)
	require.Equal(t, UDPPort{Sockets: 2, Queued: 0x300, Drops: 12}, s)
	s, err = parseNetUDP(table, 1)
	require.NoError(t, err)
	require.Zero(t, s.Sockets)
}

func TestReadUDPPortSeesABoundSocket(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	s, err := ReadUDPPort(pc.LocalAddr().(*net.UDPAddr).Port)
	require.NoError(t, err)
	require.Equal(t, 1, s.Sockets)
}
