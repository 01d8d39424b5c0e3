package batch

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// pushingSender adds metrics as a listener that can push back does: it waits for room before each
// group, and records how long it was held back.
type pushingSender struct {
	w    *Writer
	sent atomic.Int64
	held time.Duration
}

func (s *pushingSender) send(t *testing.T, groups, size int) {
	for range groups {
		start := time.Now()
		require.NoError(t, s.w.WaitForRoom(context.Background()))
		s.held += time.Since(start)
		n := int(s.sent.Load())
		require.NoError(t, s.w.WriteBatch(testutil.SeqMetrics(n, n+size)))
		s.sent.Add(int64(size))
	}
}

// TestBackpressureSlowsASenderToAHealthySink: a sink that takes 200 ms per batch of 10 and
// a sender that would add 1000 metrics at once. The sender is held back to the sink's pace,
// nothing is evicted, and every metric arrives in order.
func TestBackpressureSlowsASenderToAHealthySink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: 200 * time.Millisecond}
		w := newTestWriter(t, out, Options{BatchSize: 10, BufferLimit: 100, FlushInterval: time.Hour, MaxInFlight: 1})
		s := &pushingSender{w: w}
		start := time.Now()
		s.send(t, 100, 10)
		synctest.Wait()
		require.NoError(t, w.Close(context.Background()))

		st := w.Stats()
		require.Zero(t, st.Dropped, "nothing evicted")
		require.Equal(t, int64(1000), st.Written)
		_, written := out.Snapshot()
		require.Equal(t, testutil.Seqs(testutil.SeqMetrics(0, 1000)), testutil.Seqs(written))
		// 1000 metrics at 10 per 200 ms take 20 s; the sender was held for most of it.
		require.GreaterOrEqual(t, time.Since(start), 19*time.Second)
		require.Greater(t, s.held, 10*time.Second, "the sender was slowed to the sink's pace")
	})
}

// TestBackpressureNeverWaitsOnAFailingSink: a sink that refuses every connection never holds
// the sender back; the buffer evicts the oldest, and the count is exact.
func TestBackpressureNeverWaitsOnAFailingSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: time.Millisecond}
		out.Answer = func(int, []morse.Metric) error { return errors.New("connection refused") }
		w := newTestWriter(t, out, Options{BatchSize: 10, BufferLimit: 100, FlushInterval: time.Hour,
			RetryInitial: time.Minute, RetryMax: time.Minute})
		s := &pushingSender{w: w}
		start := time.Now()
		for range 100 {
			s.send(t, 1, 10)
			time.Sleep(10 * time.Millisecond) // the listener's pace; the writer backs off meanwhile
		}
		require.Equal(t, time.Second, time.Since(start), "the sender never waited")
		require.Zero(t, s.held)
		require.False(t, w.HoldsBack())
		st := w.Stats()
		// At most one batch is in flight in the failing write, outside the ring.
		require.Equal(t, int64(1000), int64(st.BufferSize)+st.Dropped+out.inFlight.Load()*10)
		require.GreaterOrEqual(t, st.Dropped, int64(890), "the oldest were evicted")
	})
}

// TestBackpressureStartsWhenTheSinkComesBack: while the sink is down the sender never waits;
// once a write succeeds with the buffer above the high-water mark, it is held until the
// backlog is down to the low-water mark.
func TestBackpressureStartsWhenTheSinkComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		out := &slowOutput{rtt: 100 * time.Millisecond}
		out.Answer = func(int, []morse.Metric) error {
			if down.Load() {
				return errors.New("503 service unavailable")
			}
			return nil
		}
		w := newTestWriter(t, out, Options{BatchSize: 10, BufferLimit: 100, FlushInterval: time.Hour,
			RetryInitial: time.Second, RetryMax: time.Second, MaxInFlight: 1})
		s := &pushingSender{w: w}
		s.send(t, 1, 10)
		time.Sleep(150 * time.Millisecond) // the first write has failed: the writer backs off
		s.held = 0
		s.send(t, 9, 10)
		require.Zero(t, s.held, "no wait while the sink is down")
		synctest.Wait()
		require.False(t, w.HoldsBack())

		down.Store(false)
		for w.Stats().Written == 0 { // the retry after the backoff succeeds
			time.Sleep(10 * time.Millisecond)
		}
		require.True(t, w.HoldsBack(), "healthy again, and the buffer is above the high-water mark")

		start := time.Now()
		require.NoError(t, w.WaitForRoom(context.Background()))
		require.LessOrEqual(t, w.Stats().BufferSize, 60, "released at the low-water mark")
		require.Greater(t, time.Since(start), time.Duration(0), "the sender waited")
		require.Zero(t, w.Stats().Dropped)
	})
}

// TestBackpressureReleasesOnClose: a sender held back by an output that closes is let go.
func TestBackpressureReleasesOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: time.Hour}
		w := newTestWriter(t, out, Options{BatchSize: 10, BufferLimit: 100, FlushInterval: time.Hour, MaxInFlight: 1})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 95)))
		synctest.Wait()
		require.True(t, w.HoldsBack())
		done := make(chan error, 1)
		go func() { done <- w.WaitForRoom(context.Background()) }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Close(ctx)
		require.NoError(t, <-done)
	})
}

func TestWaterMarksValidate(t *testing.T) {
	for _, o := range []Options{{HighWater: 0.5, LowWater: 0.5}, {HighWater: 1.2, LowWater: 0.5}, {HighWater: 0.5, LowWater: -0.1}} {
		_, err := NewWriter(&testutil.ScriptOutput{}, o)
		require.ErrorContains(t, err, "HighWater")
	}
}
