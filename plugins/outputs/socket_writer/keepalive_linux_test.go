package socketwriter

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestKeepAlivePeriod reads the connected socket's keep-alive options from the kernel.
func TestKeepAlivePeriod(t *testing.T) {
	addr, _, _ := listen(t, "tcp://127.0.0.1:0")
	period := func(d time.Duration) *morse.Duration { p := morse.Duration(d); return &p }
	for _, tc := range []struct {
		name   string
		period *morse.Duration
		on     bool
		idle   time.Duration
	}{
		{"unset keeps Go's default of 15s", nil, true, 15 * time.Second},
		{"5m", period(5 * time.Minute), true, 5 * time.Minute},
		{"0s turns it off", period(0), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := writer(t, addr, func(w *SocketWriter) { w.KeepAlivePeriod = tc.period })
			rc, err := w.conn.(*stream).conn.(*net.TCPConn).SyscallConn()
			require.NoError(t, err)
			var on, idle int
			require.NoError(t, rc.Control(func(fd uintptr) {
				on, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
				idle, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
			}))
			require.Equal(t, tc.on, on == 1)
			if tc.on {
				require.Equal(t, tc.idle, time.Duration(idle)*time.Second)
			}
		})
	}
}
