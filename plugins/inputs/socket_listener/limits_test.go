package socketlistener

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// readUntilClosed reads conn until the server closes it, failing the test if that takes
// longer than the deadline.
func readUntilClosed(t *testing.T, conn net.Conn) error {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitFor)))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close the connection")
	return err
}

// sendLine writes one line and waits until the listener delivered metric number n.
func sendLine(t *testing.T, conn net.Conn, acc interface{ NMetrics() int }, n int) {
	t.Helper()
	_, err := conn.Write([]byte("m v=1\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return acc.NMetrics() >= n }, waitFor, time.Millisecond)
}

// TestConnectionsOverTheCapEvictTheIdleOne holds the only slot with a connection that has
// sent a line and waits: a second connection takes the slot, the first is closed and
// counted, and once the second is closed the slot serves again.
func TestConnectionsOverTheCapEvictTheIdleOne(t *testing.T) {
	s := newListener(t, "tcp://127.0.0.1:0", func(s *SocketListener) { s.MaxConnections = 1 })
	acc, st := start(t, s)
	addr := s.Addr().String()

	first, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer first.Close()
	sendLine(t, first, acc, 1) // the first connection holds the slot, idle

	second, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	sendLine(t, second, acc, 2)
	_ = readUntilClosed(t, first)
	require.Equal(t, int64(1), st.Counter("connections_evicted").Get())
	require.Zero(t, st.Counter("connections_refused").Get())

	require.NoError(t, second.Close())
	require.Eventually(t, func() bool { return st.Counter("connections_closed").Get() == 2 }, waitFor, time.Millisecond)
	third, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer third.Close()
	sendLine(t, third, acc, 3)
	require.Equal(t, int64(3), st.Counter("connections_opened").Get())
	require.Equal(t, int64(1), st.Counter("connections_evicted").Get(), "a free slot evicts nothing")
}

// TestIdleConnectionIsClosedAfterReadTimeout keeps a connection silent and sees the server
// close it; the listener still serves afterwards.
func TestIdleConnectionIsClosedAfterReadTimeout(t *testing.T) {
	s := newListener(t, "tcp://127.0.0.1:0", func(s *SocketListener) { s.ReadTimeout = morse.Duration(100 * time.Millisecond) })
	acc, _ := start(t, s)
	idle, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer idle.Close()
	require.NoError(t, readUntilClosed(t, idle), "a clean close (EOF)")

	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	sendLine(t, conn, acc, 1)
}

// TestStopClosesConnectionsAndWaits stops a listener with open connections: Stop returns,
// the clients see their connections closed, and the socket is gone.
func TestStopClosesConnectionsAndWaits(t *testing.T) {
	path := filepath.Join(testutil.SocketDir(t), "stop.sock")
	s := newListener(t, "unix://"+path, func(s *SocketListener) { s.SocketMode = "0600" })
	acc, _ := start(t, s)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket_mode applies")

	var conns []net.Conn
	for i := range 3 {
		c, err := net.Dial("unix", path)
		require.NoError(t, err)
		defer c.Close()
		sendLine(t, c, acc, i+1)
		conns = append(conns, c)
	}
	s.Stop()
	require.Nil(t, s.Addr())
	noGoroutinesLeft(t)
	for _, c := range conns {
		_ = readUntilClosed(t, c)
	}
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket file is removed")

	// A second start binds the same path again.
	acc2, _ := start(t, s)
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer c.Close()
	sendLine(t, c, acc2, 1)
}

// noGoroutinesLeft fails if a goroutine of the listener is still running. Stop waits for
// every one, so none may be left when it has returned.
func noGoroutinesLeft(t *testing.T) {
	t.Helper()
	// A goroutine that has told Stop it is done still has its own return to make: it may be
	// seen on its way out, so the check waits a moment for that, and no longer. One that
	// outlived Stop for good is still there when the wait ends.
	buf := make([]byte, 1<<20)
	var stacks string
	left := func() string {
		stacks = string(buf[:runtime.Stack(buf, true)])
		for _, fn := range []string{"(*streamServer)", "(*packetServer)", "(*ConnSet)", "(*limitListener)"} {
			if strings.Contains(stacks, fn) {
				return fn
			}
		}
		return ""
	}
	deadline := time.Now().Add(2 * time.Second)
	for fn := left(); fn != ""; fn = left() {
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine outlived Stop: %s\n%s", fn, stacks)
		}
		runtime.Gosched()
	}
}

// TestStopEndsEveryReceiver stops a UDP listener with several receivers.
func TestStopEndsEveryReceiver(t *testing.T) {
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) { s.UDPReceivers = 4 })
	acc, _ := start(t, s)
	sendDatagrams(t, s.Addr(), []string{"m v=1"})
	waitMetrics(t, acc, 1)
	s.Stop()
	noGoroutinesLeft(t)
}

// TestStaleSocketIsReplacedButNotAFile checks what the listener does with what it finds at
// the socket path.
func TestStaleSocketIsReplacedButNotAFile(t *testing.T) {
	dir := testutil.SocketDir(t)
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("keep me"), 0o600))
	s := newListener(t, "unix://"+file)
	err := s.Start(t.Context(), nil)
	require.ErrorContains(t, err, "not a socket")

	path := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	l.SetUnlinkOnClose(false)
	require.NoError(t, l.Close()) // leaves the file behind, as a crash would
	s = newListener(t, "unix://"+path)
	acc, _ := start(t, s)
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer c.Close()
	sendLine(t, c, acc, 1)
}

// TestTLS serves TCP with TLS and mutual TLS: a client with a certificate is served, a TLS
// 1.1 client and a client without a certificate are refused.
func TestTLS(t *testing.T) {
	certs := testutil.NewCerts(t)
	s := newListener(t, "tcp://127.0.0.1:0", func(s *SocketListener) {
		s.Cert, s.Key, s.AllowedCACerts = certs.ServerCert, certs.ServerKey, []string{certs.CA}
	})
	acc, _ := start(t, s)
	addr := s.Addr().String()

	old := certs.ClientTLS(true)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	_, err := tls.Dial("tcp", addr, old)
	require.ErrorContains(t, err, "protocol version not supported")

	noCert, err := tls.Dial("tcp", addr, certs.ClientTLS(false))
	if err == nil { // TLS 1.3: the server's verdict arrives after the client's handshake
		defer noCert.Close()
		_, err = noCert.Write([]byte("m v=1\n"))
		require.NoError(t, err)
		err = readUntilClosed(t, noCert)
	}
	require.ErrorContains(t, err, "certificate required")

	good, err := tls.Dial("tcp", addr, certs.ClientTLS(true))
	require.NoError(t, err)
	defer good.Close()
	sendLine(t, good, acc, 1)
	require.Equal(t, 1, acc.NMetrics(), "only the client with a certificate delivered")
}

// TestGzipDatagrams reads gzip datagrams and drops one that decompresses beyond
// max_decompression_size. One receiver parses the datagrams in order, so the bomb has been
// judged by the time the lines after it arrive; with several, another worker could deliver
// them while the first still inflates it.
func TestGzipDatagrams(t *testing.T) {
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) {
		s.ContentEncoding, s.MaxDecompressionSize, s.UDPReceivers = "gzip", 1<<10, 1
	})
	acc, st := start(t, s)
	conn, err := net.Dial("udp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	bomb := gzipped(bytes.Repeat([]byte("#"), 1<<20)) // a comment line of 1 MiB
	require.Less(t, len(bomb), 4<<10)
	_, err = conn.Write(bomb)
	require.NoError(t, err)
	_, err = conn.Write(gzipped([]byte("m v=1i 1\nm v=2i 2\n")))
	require.NoError(t, err)
	waitMetrics(t, acc, 2)
	require.Equal(t, int64(1), st.Counter("decode_errors").Get())
	require.Equal(t, int64(2), st.Counter("packets_received").Get())
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// TestGzipStream reads a whole TCP connection that is one gzip stream.
func TestGzipStream(t *testing.T) {
	s := newListener(t, "tcp://127.0.0.1:0", func(s *SocketListener) { s.ContentEncoding = "gzip" })
	acc, _ := start(t, s)
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	_, err = conn.Write(gzipped([]byte("m v=1i 1\nm v=2i 2")))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	waitMetrics(t, acc, 2)
}

// TestGzipMembersOnOneConnection: on a connection that stays open, the lines of each gzip
// member arrive before the sender sends more, whether it sends a member per metric (as
// Telegraf's socket_writer does) or per batch (as morse's does), and a single member that
// the sender flushes as it goes arrives flush by flush.
func TestGzipMembersOnOneConnection(t *testing.T) {
	s := newListener(t, "tcp://127.0.0.1:0", func(s *SocketListener) { s.ContentEncoding = "gzip" })
	acc, _ := start(t, s)
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	total := 0
	for _, member := range []string{"m v=1i 1\n", "m v=2i 2\nm v=3i 3\n", "m v=4i 4\n"} {
		_, err = conn.Write(gzipped([]byte(member)))
		require.NoError(t, err)
		total += strings.Count(member, "\n")
		waitMetrics(t, acc, total)
	}
	zw := gzip.NewWriter(conn)
	for _, line := range []string{"m v=5i 5\n", "m v=6i 6\n"} {
		_, err = zw.Write([]byte(line))
		require.NoError(t, err)
		require.NoError(t, zw.Flush())
		total++
		waitMetrics(t, acc, total)
	}
}
