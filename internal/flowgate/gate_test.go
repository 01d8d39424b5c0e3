package flowgate

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// backlog is a level the test sets, with the gate observing each change as an owner would.
type backlog struct {
	n atomic.Int64
	g *Gate
}

// newBacklog returns a backlog and the number of times its gate closed. onClose runs
// outside the gate's lock, from whichever goroutine closed it, so it counts atomically.
func newBacklog(high, low int) (*backlog, *atomic.Int64) {
	b := &backlog{}
	closes := new(atomic.Int64)
	b.g = New(high, low, func() int { return int(b.n.Load()) }, func() { closes.Add(1) })
	return b, closes
}

func (b *backlog) set(n int) {
	b.n.Store(int64(n))
	b.g.Observe(n)
}

func TestGateWaterMarks(t *testing.T) {
	type step struct {
		size    int
		healthy *bool // nil: unchanged
		closed  bool
	}
	yes, no := true, false
	tests := []struct {
		name  string
		steps []step
	}{
		{"a new consumer is taken to keep up", []step{{size: 79, closed: false}, {size: 80, closed: true}}},
		{"an unhealthy consumer never holds back", []step{{size: 100, healthy: &no, closed: false}, {size: 1000, closed: false}}},
		{"closes at high, stays closed between the marks, opens at low", []step{
			{size: 0, healthy: &yes}, {size: 79, closed: false}, {size: 80, closed: true},
			{size: 95, closed: true}, {size: 61, closed: true}, {size: 60, closed: false}, {size: 79, closed: false},
		}},
		{"a consumer that fails lets go at once", []step{
			{size: 90, healthy: &yes, closed: true}, {size: 90, healthy: &no, closed: false}, {size: 100, closed: false},
		}},
		{"a consumer that recovers above high holds back again", []step{
			{size: 90, healthy: &no}, {size: 95, healthy: &yes, closed: true},
		}},
		{"recovering between the marks does not hold back", []step{
			{size: 70, healthy: &no}, {size: 70, healthy: &yes, closed: false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBacklog(80, 60)
			for i, s := range tt.steps {
				b.n.Store(int64(s.size))
				if s.healthy != nil {
					b.g.SetHealthy(*s.healthy)
				}
				b.g.Observe(s.size)
				require.Equal(t, s.closed, b.g.Closed(), "step %d: size %d", i, s.size)
			}
		})
	}
}

func TestGateTrustsTheLevelNotAStaleHint(t *testing.T) {
	b, closes := newBacklog(80, 60)
	b.g.SetHealthy(true)
	b.n.Store(10) // the backlog is low; a caller reports a size it saw earlier
	b.g.Observe(90)
	require.False(t, b.g.Closed())
	require.Zero(t, closes.Load())
	b.set(85)
	require.True(t, b.g.Closed())
	require.Equal(t, int64(1), closes.Load(), "the owner hears of the closing once")
	b.n.Store(70)
	b.g.Observe(10)
	require.True(t, b.g.Closed(), "a stale low hint does not open it")
}

func TestGateWait(t *testing.T) {
	b, _ := newBacklog(80, 60)
	require.NoError(t, b.g.Wait(context.Background()), "open: no wait")
	b.g.SetHealthy(true)
	b.set(80)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.g.Wait(ctx), context.DeadlineExceeded, "closed: waits until ctx ends")

	released := make(chan error)
	go func() { released <- b.g.Wait(context.Background()) }()
	b.set(70)
	select {
	case <-released:
		t.Fatal("released above the low-water mark")
	default:
	}
	b.set(60)
	require.NoError(t, <-released)
}

func TestGateDisable(t *testing.T) {
	b, _ := newBacklog(80, 60)
	b.g.SetHealthy(true)
	b.set(90)
	require.True(t, b.g.Closed())
	done := make(chan error)
	go func() { done <- b.g.Wait(context.Background()) }()
	b.g.Disable()
	require.NoError(t, <-done)
	b.set(100)
	require.False(t, b.g.Closed(), "a disabled gate stays open")
}

// TestGateConcurrent has producers add while a consumer drains, under -race: the backlog
// never passes high plus what the producers add between two waits, and no producer is left
// waiting at the end.
func TestGateConcurrent(t *testing.T) {
	const high, low, step, producers = 800, 600, 8, 8
	b, _ := newBacklog(high, low)
	b.g.SetHealthy(true)
	var peak atomic.Int64
	stop := make(chan struct{})
	var consumer sync.WaitGroup
	consumer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := b.n.Load(); n > 0 {
				b.g.Observe(int(b.n.Add(-min(n, 50))))
			}
		}
	})
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for range 2000 {
				require.NoError(t, b.g.Wait(context.Background()))
				n := b.n.Add(step)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				b.g.Observe(int(n))
			}
		})
	}
	wg.Wait()
	close(stop)
	consumer.Wait()
	require.LessOrEqual(t, peak.Load(), int64(high+producers*step), "the backlog stays near the high-water mark")
}

// A hold closes the gate whatever the backlog and the consumer's health, and its release
// leaves the gate to the water marks again. WaitReleased waits for the hold alone.
func TestGateHold(t *testing.T) {
	b, closes := newBacklog(80, 60)
	b.g.SetHealthy(false) // a sink that fails never holds back; a hold does
	b.set(0)
	b.g.Hold(true)
	require.True(t, b.g.Closed())
	require.True(t, b.g.Held())
	require.Equal(t, int64(1), closes.Load(), "the owner hears of the closing")
	b.set(0)
	require.True(t, b.g.Closed(), "an empty backlog does not open a held gate")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.g.WaitReleased(ctx), context.DeadlineExceeded)
	require.ErrorIs(t, b.g.Wait(ctx), context.DeadlineExceeded)

	released, opened := make(chan error), make(chan error)
	go func() { released <- b.g.WaitReleased(context.Background()) }()
	go func() { opened <- b.g.Wait(context.Background()) }()
	b.g.SetHealthy(true)
	b.n.Store(90) // a healthy consumer's backlog above the high-water mark keeps it closed
	b.g.Hold(false)
	require.NoError(t, <-released, "the hold is released although the backlog still holds back")
	require.True(t, b.g.Closed())
	require.False(t, b.g.Held())
	b.set(60)
	require.NoError(t, <-opened)

	b.g.Hold(true)
	require.True(t, b.g.Closed())
	b.g.Disable()
	require.False(t, b.g.Closed(), "disabling opens a held gate")
	require.NoError(t, b.g.WaitReleased(context.Background()))
}
