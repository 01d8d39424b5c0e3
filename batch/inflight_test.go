package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// slowOutput takes rtt (fake time) per write, like a sink with a long round trip, and
// records how many writes were in flight at once. answer decides each write's result.
type slowOutput struct {
	testutil.ScriptOutput
	rtt               time.Duration
	inFlight, maxSeen atomic.Int64
}

func (o *slowOutput) Write(ctx context.Context, batch []morse.Metric) error {
	n := o.inFlight.Add(1)
	for {
		m := o.maxSeen.Load()
		if n <= m || o.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	defer o.inFlight.Add(-1)
	t := time.NewTimer(o.rtt)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done(): // as an output must: the round trip is abandoned when cancelled
		return ctx.Err()
	}
	return o.ScriptOutput.Write(ctx, batch)
}

func (o *slowOutput) MaxConcurrentWrites() int { return 4 }

func TestMaxInFlightHidesTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: 10 * time.Millisecond}
		w := newTestWriter(t, out, Options{BatchSize: 5, BufferLimit: 100, FlushInterval: time.Hour, MaxInFlight: 4})
		start := time.Now()
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 50))) // ten batches at once
		time.Sleep(time.Second)
		calls, written := out.Snapshot()
		require.ElementsMatch(t, testutil.SeqRange(0, 50), testutil.Seqs(written), "every metric written exactly once")
		require.Equal(t, int64(4), out.maxSeen.Load(), "four writes in flight at once")
		require.Equal(t, 30*time.Millisecond, calls[len(calls)-1].Sub(start), "ten batches in three round trips, not ten")
		require.Equal(t, int64(50), w.Stats().Written)
	})
}

func TestMaxInFlightOneWritesOneAtATimeInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: 10 * time.Millisecond}
		w := newTestWriter(t, out, Options{BatchSize: 5, BufferLimit: 100, FlushInterval: time.Hour, MaxInFlight: 1})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 20)))
		time.Sleep(time.Second)
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, 20), testutil.Seqs(written), "one at a time keeps the order")
		require.Equal(t, int64(1), out.maxSeen.Load())
	})
}

func TestInFlightFailuresReturnInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		failed := map[int]bool{}
		out := &slowOutput{rtt: time.Millisecond}
		out.Answer = func(_ int, b []morse.Metric) error {
			mu.Lock()
			defer mu.Unlock()
			first := testutil.Seqs(b)[0]
			// The first attempt at the batches starting at 0 and 10 fails; 5 goes through.
			if (first == 0 || first == 10) && !failed[first] {
				failed[first] = true
				return errors.New("connection reset")
			}
			return nil
		}
		w := newTestWriter(t, out, Options{BatchSize: 5, BufferLimit: 100, FlushInterval: time.Hour, MaxInFlight: 3})
		w.retry.policy.Rand = func() float64 { return 1 }
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 15)))
		time.Sleep(500 * time.Millisecond) // the three writes are done; the backoff waits 1s
		require.Equal(t, append(testutil.SeqRange(0, 5), testutil.SeqRange(10, 15)...), ringSeqs(w),
			"the failed batches are back at the head, oldest first")
		time.Sleep(5 * time.Second)
		var order [][]int
		for _, b := range out.Batches() {
			order = append(order, testutil.Seqs(b))
		}
		require.Len(t, order, 5)
		require.ElementsMatch(t, [][]int{testutil.SeqRange(0, 5), testutil.SeqRange(5, 10), testutil.SeqRange(10, 15)}, order[:3], "three in flight")
		require.ElementsMatch(t, [][]int{testutil.SeqRange(0, 5), testutil.SeqRange(10, 15)}, order[3:], "then the two retried")
		st := w.Stats()
		require.Equal(t, int64(15), st.Written)
		require.Zero(t, st.Dropped)
		require.Equal(t, int64(2), st.WriteErrors)
	})
}

func TestInFlightFailuresEvictTheOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: 10 * time.Millisecond}
		down := atomic.Bool{}
		down.Store(true)
		out.Answer = func(int, []morse.Metric) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		}
		w := newTestWriter(t, out, Options{BatchSize: 5, BufferLimit: 10, FlushInterval: time.Hour, MaxInFlight: 2})
		w.retry.policy.Rand = func() float64 { return 1 }
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 10))) // two full batches leave at once
		time.Sleep(5 * time.Millisecond)                             // both writes are in flight
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(10, 16)))
		time.Sleep(10 * time.Millisecond) // both fail; the ring held 10..15 and room for 4
		require.Equal(t, testutil.SeqRange(6, 16), ringSeqs(w), "the six oldest were evicted, the rest are in order")
		down.Store(false)
		time.Sleep(5 * time.Second)
		_, written := out.Snapshot()
		require.ElementsMatch(t, testutil.SeqRange(6, 16), testutil.Seqs(written), "and each arrives once")
		st := w.Stats()
		require.Equal(t, int64(6), st.DroppedByReason[morse.ReasonBufferFull])
		require.Equal(t, int64(10), st.Written)
	})
}

func TestWriterTakesMaxInFlightFromTheOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &slowOutput{rtt: 10 * time.Millisecond}
		w := newTestWriter(t, out, Options{BatchSize: 10, FlushInterval: time.Hour})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 100)))
		time.Sleep(time.Second)
		require.Equal(t, int64(4), out.maxSeen.Load(), "the writer honours MaxConcurrentWrites")
		_, written := out.Snapshot()
		require.ElementsMatch(t, testutil.SeqRange(0, 100), testutil.Seqs(written))
	})
}

// ringSeqs lists the sequence numbers held in the writer's ring, oldest first, without
// taking them out.
func ringSeqs(w *Writer) []int {
	mem := w.buf.(*MemoryBuffer)
	mem.mu.Lock()
	defer mem.mu.Unlock()
	ms := make([]morse.Metric, mem.r.Len())
	for i := range ms {
		ms[i] = mem.r.Peek(i)
	}
	return testutil.Seqs(ms)
}

// TestFlushLetsGoOfItsBatches: once a flush has booked its writes, written or back in the
// buffer for a retry, the slices kept for the next flush hold no metric, so the collector
// does not count a flush's worth of metrics as live until the next one.
func TestFlushLetsGoOfItsBatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(call int, b []morse.Metric) error
	}{
		{"written", nil},
		{"to retry", func(call int, _ []morse.Metric) error {
			if call == 0 {
				return errors.New("unavailable")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				out := &slowOutput{rtt: time.Millisecond}
				out.Answer = tc.answer
				w := newTestWriter(t, out, Options{BatchSize: 5, BufferLimit: 100, FlushInterval: time.Hour, MaxInFlight: 4})
				// Pin the full jitter at its ceiling (1 s): a draw below 10 ms would retry the
				// failed batch before the check below, leaving the buffer empty.
				w.retry.policy.Rand = func() float64 { return 1 }
				require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 13)))
				time.Sleep(10 * time.Millisecond) // past the first round of writes, before a retry
				synctest.Wait()
				for i := range w.flusher.flights {
					fl := &w.flusher.flights[i]
					require.Empty(t, fl.batch, "flight %d", i)
					for j, m := range fl.batch[:cap(fl.batch)] {
						require.Zero(t, m, "flight %d, slot %d", i, j)
					}
				}
				if tc.answer != nil {
					require.Positive(t, w.buf.Len(), "the failed batch waits in the buffer")
				}
			})
		})
	}
}
