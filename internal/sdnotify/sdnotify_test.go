package sdnotify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// listen opens a notify socket the test owns, as the service manager does, and returns the
// value NOTIFY_SOCKET would hold for it.
func listen(t *testing.T, abstract bool) (*net.UnixConn, string) {
	t.Helper()
	var name string
	if abstract {
		name = fmt.Sprintf("@morse-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	} else {
		name = filepath.Join(testutil.SocketDir(t), "notify")
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn, name
}

// receive reads one datagram, waiting at most a few seconds.
func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		send func(*Notifier) error
		want string
	}{
		{"ready", (*Notifier).Ready, "READY=1"},
		{"stopping", (*Notifier).Stopping, "STOPPING=1"},
		{"watchdog", (*Notifier).Watchdog, "WATCHDOG=1"},
		{"status", func(n *Notifier) error { return n.Status("inputs 3, outputs 1") }, "STATUS=inputs 3, outputs 1"},
		{"status on one line", func(n *Notifier) error { return n.Status("reload refused:\n  a.conf:3: bad\n") },
			"STATUS=reload refused: a.conf:3: bad"},
		{"extend timeout", func(n *Notifier) error { return n.ExtendTimeout(12500 * time.Millisecond) }, "EXTEND_TIMEOUT_USEC=12500000"},
	}
	for _, abstract := range []bool{false, true} {
		conn, sock := listen(t, abstract)
		n, err := New(env(map[string]string{"NOTIFY_SOCKET": sock}), 1)
		require.NoError(t, err)
		require.True(t, n.Enabled())
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/abstract=%v", tt.name, abstract), func(t *testing.T) {
				require.NoError(t, tt.send(n))
				require.Equal(t, tt.want, receive(t, conn))
			})
		}
	}
}

// TestReloadingCarriesMonotonicUsec: MONOTONIC_USEC is CLOCK_MONOTONIC at the time of the
// call, the clock systemd compares it with, read here independently before and after.
func TestReloadingCarriesMonotonicUsec(t *testing.T) {
	conn, sock := listen(t, false)
	n, err := New(env(map[string]string{"NOTIFY_SOCKET": sock}), 1)
	require.NoError(t, err)
	before, err := clockMonotonic()
	require.NoError(t, err)
	require.NoError(t, n.Reloading())
	after, err := clockMonotonic()
	require.NoError(t, err)

	lines := strings.Split(receive(t, conn), "\n")
	require.Len(t, lines, 2, "one datagram with both assignments")
	require.Equal(t, "RELOADING=1", lines[0])
	usec, ok := strings.CutPrefix(lines[1], "MONOTONIC_USEC=")
	require.True(t, ok, lines[1])
	v, err := strconv.ParseInt(usec, 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, v, before.Microseconds())
	require.LessOrEqual(t, v, after.Microseconds())
}

func TestDisabledSendsNothingAndSucceeds(t *testing.T) {
	for _, n := range []*Notifier{nil, {}, mustNew(t, map[string]string{})} {
		require.False(t, n.Enabled())
		require.NoError(t, n.Ready())
		require.NoError(t, n.Reloading())
		require.NoError(t, n.Stopping())
		require.NoError(t, n.Status("x"))
		require.NoError(t, n.Watchdog())
		require.NoError(t, n.ExtendTimeout(time.Second))
		_, ok := n.WatchdogInterval()
		require.False(t, ok)
	}
}

func mustNew(t *testing.T, kv map[string]string) *Notifier {
	t.Helper()
	n, err := New(env(kv), 42)
	require.NoError(t, err)
	return n
}

func TestWatchdogInterval(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    time.Duration
		enabled bool
		err     string
	}{
		{"unset", map[string]string{}, 0, false, ""},
		{"for this process", map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}, 30 * time.Second, true, ""},
		{"no pid means ours", map[string]string{"WATCHDOG_USEC": "1500"}, 1500 * time.Microsecond, true, ""},
		{"for another process", map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}, 0, false, ""},
		{"zero", map[string]string{"WATCHDOG_USEC": "0"}, 0, false, `WATCHDOG_USEC "0"`},
		{"negative", map[string]string{"WATCHDOG_USEC": "-5"}, 0, false, `WATCHDOG_USEC "-5"`},
		{"garbage", map[string]string{"WATCHDOG_USEC": "30s"}, 0, false, `WATCHDOG_USEC "30s"`},
		{"bad pid", map[string]string{"WATCHDOG_USEC": "100", "WATCHDOG_PID": "x"}, 0, false, `WATCHDOG_PID "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := New(env(tt.env), 42)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
			} else {
				require.NoError(t, err)
			}
			got, ok := n.WatchdogInterval()
			require.Equal(t, tt.enabled, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestMalformedSocketIsAnError(t *testing.T) {
	for _, sock := range []string{"relative/path", "@", "vsock:2:1234"} {
		n, err := New(env(map[string]string{"NOTIFY_SOCKET": sock}), 1)
		require.ErrorContains(t, err, "NOTIFY_SOCKET", sock)
		require.False(t, n.Enabled(), "a socket it cannot use leaves the Notifier disabled")
		require.NoError(t, n.Ready())
	}
}

func TestExtendTimeoutRejectsNonPositive(t *testing.T) {
	_, sock := listen(t, false)
	n := mustNew(t, map[string]string{"NOTIFY_SOCKET": sock})
	require.Error(t, n.ExtendTimeout(0))
	require.Error(t, n.ExtendTimeout(-time.Second))
}

// TestSendToAbsentManagerFails: a socket nobody listens on is an error, not a hang.
func TestSendToAbsentManagerFails(t *testing.T) {
	n := mustNew(t, map[string]string{"NOTIFY_SOCKET": filepath.Join(t.TempDir(), "gone")})
	require.Error(t, n.Ready())
}

// TestStuckManagerDoesNotStickTheSender: a manager that stops reading fills its socket's
// queue; from then on each send gives up at its deadline instead of blocking for good.
func TestStuckManagerDoesNotStickTheSender(t *testing.T) {
	_, sock := listen(t, false) // never read
	n := mustNew(t, map[string]string{"NOTIFY_SOCKET": sock})
	n.timeout = 20 * time.Millisecond
	var err error
	for i := 0; i < 100000 && err == nil; i++ {
		err = n.Status("status " + strconv.Itoa(i))
	}
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}
