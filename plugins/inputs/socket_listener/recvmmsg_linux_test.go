package socketlistener

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestUDPReadsAreBatched: the datagrams waiting on a UDP socket come back from one read,
// which is one recvmmsg call on Linux, each with its sender's name.
func TestUDPReadsAreBatched(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	require.NoError(t, err)
	defer conn.Close()
	for i := range batchSize {
		_, err := conn.Write([]byte(fmt.Sprintf("m v=%d\n", i)))
		require.NoError(t, err)
	}
	b := newBatch()
	require.NoError(t, pc.SetReadDeadline(time.Now().Add(waitFor)))
	n, err := batchReader(pc)(b)
	require.NoError(t, err)
	require.Equal(t, batchSize, n, "one read returns every datagram waiting")
	for i := range n {
		require.Equal(t, fmt.Sprintf("m v=%d\n", i), string(b.bufs[i][:b.sizes[i]]))
		require.Equal(t, conn.LocalAddr().String(), sender{b, i}.LogValue().String())
	}
}

// TestSendersAreNamedAsTheKernelGaveThem: a log line names a datagram's sender by the
// address it sent from, over IPv4, IPv6 and a named or unnamed unix socket.
func TestSendersAreNamedAsTheKernelGaveThem(t *testing.T) {
	dir := testutil.SocketDir(t)
	cases := []struct {
		name, network, listen, bind string
		want                        func(from net.Addr) string
	}{
		{"udp4", "udp", "127.0.0.1:0", "127.0.0.1:0", net.Addr.String},
		{"udp6", "udp", "[::1]:0", "[::1]:0", net.Addr.String},
		{"unixgram named", "unixgram", filepath.Join(dir, "l.sock"), filepath.Join(dir, "sender.sock"), net.Addr.String},
		{"unixgram unnamed", "unixgram", filepath.Join(dir, "l2.sock"), "", func(net.Addr) string { return "unnamed socket" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := net.ListenPacket(tc.network, tc.listen)
			require.NoError(t, err)
			defer pc.Close()
			from := dialFrom(t, tc.network, tc.bind, pc.LocalAddr())
			_, err = from.Write([]byte("m v=1\n"))
			require.NoError(t, err)
			b := newBatch()
			require.NoError(t, pc.SetReadDeadline(time.Now().Add(waitFor)))
			n, err := batchReader(pc)(b)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, tc.want(from.LocalAddr()), sender{b, 0}.LogValue().String())
		})
	}
}

// dialFrom connects a datagram socket bound to bind (unbound when empty) to addr.
func dialFrom(t *testing.T, network, bind string, addr net.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{}
	if bind != "" {
		var err error
		if network == "udp" {
			d.LocalAddr, err = net.ResolveUDPAddr(network, bind)
		} else {
			d.LocalAddr, err = net.ResolveUnixAddr(network, bind)
		}
		require.NoError(t, err)
	}
	c, err := d.Dial(network, addr.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestOversizedDatagramIsDroppedWholeAndCounted: a unix datagram larger than the read
// buffer is not parsed cut short; it is counted as a read error and logged, and the
// datagrams around it arrive.
func TestOversizedDatagramIsDroppedWholeAndCounted(t *testing.T) {
	var logs bytes.Buffer
	// One worker parses the datagrams in the order they came.
	s := newListener(t, "unixgram://"+filepath.Join(testutil.SocketDir(t), "big.sock"), func(s *SocketListener) { s.UDPReceivers = 1 })
	s.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	acc, st := start(t, s)
	c := dialFrom(t, "unixgram", "", s.Addr())
	big := bytes.Repeat([]byte("m v=1\n"), maxDatagram/6+1)
	for _, d := range [][]byte{[]byte("a v=1\n"), big, []byte("b v=2\n")} {
		_, err := c.Write(d)
		require.NoError(t, err)
	}
	waitMetrics(t, acc, 2)
	s.Stop() // a worker counts a datagram's lines after it hands them over
	require.Equal(t, []string{"a", "b"}, []string{acc.Metrics()[0].Name(), acc.Metrics()[1].Name()})
	require.Equal(t, int64(1), st.Counter("read_errors").Get())
	require.Equal(t, int64(2), st.Counter("lines_received").Get())
	require.Contains(t, logs.String(), `msg="dropped a datagram larger than the read buffer" from="unnamed socket" limit_bytes=65536`)
}

// BenchmarkUDPReadBatch reads batches of 500-byte datagrams, which the loop sends before
// each read with the timer stopped: an op is one full batch read, from one call or more.
func BenchmarkUDPReadBatch(b *testing.B) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(b, err)
	defer pc.Close()
	require.NoError(b, pc.(*net.UDPConn).SetReadBuffer(4<<20))
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	require.NoError(b, err)
	defer conn.Close()
	bt, read, msg := newBatch(), batchReader(pc), make([]byte, 500)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for range batchSize {
			_, err := conn.Write(msg)
			require.NoError(b, err)
		}
		b.StartTimer()
		for got := 0; got < batchSize; {
			n, err := read(bt)
			require.NoError(b, err)
			got += n
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/datagram")
}
