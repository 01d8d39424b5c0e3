package socketlistener

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestKeepAlivePeriodArmsTheKernelTimer reads the accepted socket's timer from the kernel
// (/proc/net/tcp): with keep-alive on, an idle connection waits on the keep-alive timer,
// due within the period; with keep_alive_period = "0s" it has no timer at all.
func TestKeepAlivePeriodArmsTheKernelTimer(t *testing.T) {
	period := func(d time.Duration) *morse.Duration { p := morse.Duration(d); return &p }
	for _, tc := range []struct {
		name   string
		period *morse.Duration
		timer  int // 0: none, 2: keep-alive
		within time.Duration
	}{
		{"unset keeps Go's default of 15s", nil, 2, 15 * time.Second},
		{"7s", period(7 * time.Second), 2, 7 * time.Second},
		{"0s turns it off", period(0), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newListener(t, "tcp://127.0.0.1:0", func(s *SocketListener) { s.KeepAlivePeriod = tc.period })
			acc, _ := start(t, s)
			conn, err := net.Dial("tcp", s.srv.addr().String())
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write([]byte("m v=1\n"))
			require.NoError(t, err)
			waitMetrics(t, acc, 1) // the connection is accepted and served

			timer, when := serverSocketTimer(t, s.srv.addr().(*net.TCPAddr).Port, conn.LocalAddr().(*net.TCPAddr).Port)
			require.Equal(t, tc.timer, timer)
			if tc.timer != 0 {
				require.Positive(t, when)
				require.LessOrEqual(t, when, tc.within)
			}
		})
	}
}

// serverSocketTimer finds the socket that listens on port and is connected to peerPort in
// /proc/net/tcp, and returns its timer (the "tr" column) and how long until it fires.
func serverSocketTimer(t *testing.T, port, peerPort int) (timer int, when time.Duration) {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	require.NoError(t, err)
	hexPort := func(addr string) int {
		_, p, _ := strings.Cut(addr, ":")
		n, _ := strconv.ParseUint(p, 16, 16)
		return int(n)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 6 || hexPort(f[1]) != port || hexPort(f[2]) != peerPort {
			continue
		}
		tr, due, _ := strings.Cut(f[5], ":")
		kind, err := strconv.ParseUint(tr, 16, 8)
		require.NoError(t, err)
		ticks, err := strconv.ParseUint(due, 16, 64)
		require.NoError(t, err)
		// The kernel reports the time in USER_HZ ticks, which are hundredths of a second.
		return int(kind), time.Duration(ticks) * 10 * time.Millisecond
	}
	t.Fatalf("no socket on port %d connected to port %d in /proc/net/tcp", port, peerPort)
	return 0, 0
}
