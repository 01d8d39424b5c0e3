package socketlistener

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestDatagramRingIsAFIFOThatWrapsWithoutSplitting: datagrams come out in the order they
// went in, each whole, as the ring fills, wraps past its end and empties.
func TestDatagramRingIsAFIFOThatWrapsWithoutSplitting(t *testing.T) {
	r := newDatagramRing(100, 8)
	in, out := 0, 0
	push := func(size int) bool {
		p := make([]byte, size)
		for i := range p {
			p[i] = byte(in)
		}
		ok := r.push([]byte{byte(in)}, p)
		if ok {
			in++
		}
		return ok
	}
	popCheck := func() {
		name, payload, ok := r.front()
		require.True(t, ok)
		require.Equal(t, []byte{byte(out)}, name)
		for _, c := range payload {
			require.Equal(t, byte(out), c, "datagram %d", out)
		}
		r.pop()
		out++
	}
	for _, step := range []struct {
		push       []int // payload sizes; a negative one must not fit
		pops       int
		wantQueued int
	}{
		{push: []int{30, 30, 30, -30}, wantQueued: 3}, // 93 of 100 bytes
		{pops: 2, wantQueued: 1},                      // head at 62
		{push: []int{40, 10, -15}, wantQueued: 3},     // 40 wraps to 0 (the end is too short), 10 at 41
		{pops: 1, wantQueued: 2},                      // the unwrapped one leaves; head at 41 after 41 bytes
		{push: []int{-45, 20}, wantQueued: 3},         // 45 does not fit before the end or head
		{pops: 3, wantQueued: 0},                      // empty: the next push starts at 0 again
		{push: []int{98, -1}, wantQueued: 1},          // the whole ring in one
		{pops: 1},
		{push: []int{1, 1, 1, 1, 1, 1, 1, 1, -1}, pops: 8}, // the index bounds the count
	} {
		for _, size := range step.push {
			if size < 0 {
				require.False(t, push(-size), "a %d-byte datagram must not fit", -size)
				continue
			}
			require.True(t, push(size), "a %d-byte datagram must fit", size)
		}
		for range step.pops {
			popCheck()
		}
		require.Equal(t, step.wantQueued, r.n)
	}
	_, _, ok := r.front()
	require.False(t, ok)
}

// gatedAcc holds up the first metric until the test opens the gate, and then records how
// many bytes the listener's socket still had queued in the kernel as each metric arrived.
type gatedAcc struct {
	t      *testing.T
	port   int
	gate   chan struct{}
	mu     sync.Mutex
	queued []int64
}

func (g *gatedAcc) AddMetric(morse.Metric) {
	g.mu.Lock()
	first := len(g.queued) == 0
	g.mu.Unlock()
	if first {
		<-g.gate
	}
	q := rxQueued(g.t, g.port)
	g.mu.Lock()
	g.queued = append(g.queued, q)
	g.mu.Unlock()
}

func (g *gatedAcc) AddFields(string, map[string]any, map[string]string, ...time.Time) {}
func (g *gatedAcc) AddError(error)                                                    {}

func (g *gatedAcc) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queued)
}

// rxQueued reads from /proc/net/udp the bytes queued on the IPv4 UDP sockets bound to port.
func rxQueued(t *testing.T, port int) int64 {
	b, err := os.ReadFile("/proc/net/udp")
	require.NoError(t, err)
	var total int64
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], fmt.Sprintf(":%04X", port)) {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(rx, 16, 64)
		require.NoError(t, err)
		total += n
	}
	return total
}

// TestOneCPUDrainsTheSocketBeforeItParsesMore: on one CPU the reader moves everything the
// kernel holds into its ring before it parses the next slice. The first metric is held up
// while a burst queues in the kernel; from the second slice of parsing on, every metric
// finds the kernel's queue empty, and every datagram arrives.
func TestOneCPUDrainsTheSocketBeforeItParsesMore(t *testing.T) {
	prev := singleCPU
	singleCPU = func() bool { return true }
	t.Cleanup(func() { singleCPU = prev })
	s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) { s.UDPReceivers = 1 })
	require.NoError(t, s.setup())
	acc := &gatedAcc{t: t, gate: make(chan struct{})}
	require.NoError(t, s.Start(context.Background(), acc))
	t.Cleanup(s.Stop)
	acc.port = s.Addr().(*net.UDPAddr).Port
	conn, err := net.Dial("udp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	const n = 300
	for i := range n {
		_, err := fmt.Fprintf(conn, "m,i=%d v=%d 1700000000000000000\n", i, i)
		require.NoError(t, err)
	}
	require.Positive(t, rxQueued(t, acc.port), "the burst waits in the kernel while the parser is held up")
	close(acc.gate)
	require.Eventually(t, func() bool { return acc.count() == n }, waitFor, time.Millisecond)
	acc.mu.Lock()
	defer acc.mu.Unlock()
	for i, q := range acc.queued[parseSlice:] {
		require.Zero(t, q, "metric %d of the second slice on found datagrams still in the kernel", parseSlice+i)
	}
	require.Equal(t, int64(n), s.c.packets.Get())
}

// heldAcc is an accumulator whose outputs have no room until the test releases them.
type heldAcc struct {
	released chan struct{}
	n        atomic.Int64
}

func (h *heldAcc) AddMetric(morse.Metric) { h.n.Add(1) }
func (h *heldAcc) AddFields(string, map[string]any, map[string]string, ...time.Time) {
	h.n.Add(1)
}
func (h *heldAcc) AddError(error) {}

// WaitForRoom implements morse.RoomWaiter.
func (h *heldAcc) WaitForRoom(ctx context.Context) error {
	select {
	case <-h.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestDatagramsWaitWhileTheOutputHasNoRoom: while a healthy output holds a backlog, the UDP
// listener parses nothing, and the datagrams wait (in the ring on one CPU, in the batches
// and the kernel's buffer otherwise); once there is room, every one arrives.
func TestDatagramsWaitWhileTheOutputHasNoRoom(t *testing.T) {
	for _, oneCPU := range []bool{true, false} {
		t.Run(fmt.Sprintf("one CPU %v", oneCPU), func(t *testing.T) {
			prev := singleCPU
			singleCPU = func() bool { return oneCPU }
			t.Cleanup(func() { singleCPU = prev })
			s := newListener(t, "udp://127.0.0.1:0", func(s *SocketListener) { s.UDPReceivers = 1 })
			require.NoError(t, s.setup())
			acc := &heldAcc{released: make(chan struct{})}
			require.NoError(t, s.Start(context.Background(), acc))
			t.Cleanup(s.Stop)
			port := s.Addr().(*net.UDPAddr).Port
			conn, err := net.Dial("udp", s.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			const n = 300
			for i := range n {
				_, err := fmt.Fprintf(conn, "m,i=%d v=%d 1700000000000000000\n", i, i)
				require.NoError(t, err)
			}
			if oneCPU {
				require.Eventually(t, func() bool { return rxQueued(t, port) == 0 }, waitFor, time.Millisecond,
					"the reader drains the kernel into its ring while it may not parse")
			}
			require.Zero(t, acc.n.Load(), "nothing is parsed while the output has no room")
			close(acc.released)
			require.Eventually(t, func() bool { return acc.n.Load() == n }, waitFor, time.Millisecond)
		})
	}
}
