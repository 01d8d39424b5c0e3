package statsd

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// floodFor bounds each flood in time, besides its count.
const floodFor = 10 * time.Second

// captured gathers once and returns the sum of the counter "flood": each flood line adds 1.
func captured(t *testing.T, s *Statsd) int64 {
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Gather(context.Background(), acc))
	var n int64
	for _, m := range acc.MetricsNamed("flood") {
		v, _ := m.Field("value")
		n += v.Int()
	}
	return n
}

// TestUDPFloodIsBounded floods a listener whose workers are held (the cache's lock is
// taken, as a parse stuck behind a slow gather would be) with 100,000 datagrams. The queue
// holds allowed_pending_messages of them and drops the rest, counted; the heap stays a few
// MiB above where it was, where keeping every datagram would take hundreds. Once the workers
// go on, every datagram the socket took in is either in the aggregates or counted dropped.
func TestUDPFloodIsBounded(t *testing.T) {
	s, st := startStatsd(t, "udp", "allowed_pending_messages = 1000\nnumber_workers_threads = 2")
	before := testutil.HeapAlloc()
	s.cache.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.cache.mu.Unlock()
		}
	}()
	conn, err := net.Dial("udp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	const n = 100_000
	line := []byte("flood:1|c")
	deadline := time.Now().Add(floodFor)
	sent := 0
	for ; sent < n && time.Now().Before(deadline); sent++ {
		_, _ = conn.Write(line) // a full socket buffer refuses some: the kernel's loss, not ours
	}
	require.Eventually(t, func() bool { return st.Counter("udp_packets_dropped").Get() > 0 }, waitFor, time.Millisecond)
	held := testutil.HeapAlloc()
	grew := int64(held) - int64(before)
	t.Logf("sent %d datagrams in the flood; heap grew %d KiB while the workers were held; received %d, dropped %d",
		sent, grew>>10, st.Counter("udp_packets_received").Get(), st.Counter("udp_packets_dropped").Get())
	require.Less(t, grew, int64(16<<20), "the queue holds allowed_pending_messages datagrams, not the flood")
	require.LessOrEqual(t, st.Counter("pending_messages").Get(), int64(1000))

	s.cache.mu.Unlock()
	locked = false
	s.Stop() // waits until the workers have parsed every queued datagram
	received, dropped := st.Counter("udp_packets_received").Get(), st.Counter("udp_packets_dropped").Get()
	require.Positive(t, dropped)
	require.Equal(t, received-dropped, captured(t, s), "each received datagram was aggregated or counted dropped")
}

// TestTCPFloodWaits floods a TCP connection while the workers are held: the queue fills,
// the connection stops being read, and the sender's writes wait in the kernel instead of
// anything being dropped. Once the workers go on, every line arrives.
func TestTCPFloodWaits(t *testing.T) {
	s, st := startStatsd(t, "tcp", "allowed_pending_messages = 10\nnumber_workers_threads = 1")
	s.cache.mu.Lock()
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	// 6 MB: more than the queue (10 runs of at most 64 KiB) and the kernel's buffers hold,
	// the receiver's not grown past what it read before the queue filled, and the sender's
	// capped below.
	const lines = 600_000
	payload := []byte{}
	for range lines {
		payload = append(payload, "flood:1|c\n"...)
	}
	wrote := make(chan error, 1)
	go func() {
		require.NoError(t, conn.SetWriteDeadline(time.Now().Add(waitFor)))
		_, err := conn.Write(payload)
		wrote <- err
	}()
	require.Eventually(t, func() bool { return st.Counter("pending_messages").Get() == 10 }, waitFor, time.Millisecond,
		"the queue fills while the workers are held")
	select {
	case err := <-wrote:
		s.cache.mu.Unlock()
		t.Fatalf("the sender wrote %d lines into a held listener without waiting: %v", lines, err)
	default:
	}
	s.cache.mu.Unlock()
	require.NoError(t, <-wrote)
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return st.Counter("tcp_current_connections").Get() == 0 }, waitFor, time.Millisecond)
	s.Stop()
	require.Equal(t, int64(lines), captured(t, s), "nothing was dropped")
	require.Equal(t, int64(lines), st.Counter("tcp_packets_received").Get())
}
