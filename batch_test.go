package morse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// scriptOutput is an in-process Output whose answers the test scripts. It records what was
// written and when, in the synctest bubble's fake time.
type scriptOutput struct {
	mu       sync.Mutex
	answer   func(call int, batch []Metric) error
	calls    []time.Time
	written  []Metric
	batches  [][]Metric
	onWrite  func()
	closed   bool
	connects int
}

func (o *scriptOutput) Connect(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.connects++
	return nil
}

func (o *scriptOutput) Write(_ context.Context, batch []Metric) error {
	o.mu.Lock()
	call := len(o.calls)
	o.calls = append(o.calls, time.Now())
	var err error
	if o.answer != nil {
		err = o.answer(call, batch)
	}
	cp := append([]Metric(nil), batch...)
	o.batches = append(o.batches, cp)
	if err == nil {
		o.written = append(o.written, cp...)
	}
	hook := o.onWrite
	o.mu.Unlock()
	if hook != nil {
		hook()
	}
	return err
}

func (o *scriptOutput) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	return nil
}

func (o *scriptOutput) snapshot() (calls []time.Time, written []Metric) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.calls...), append([]Metric(nil), o.written...)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestWriter(t *testing.T, out Output, opts BatchOptions) *BatchWriter {
	t.Helper()
	opts.Logger = quietLogger()
	w, err := NewBatchWriter(out, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = w.Close(ctx)
	})
	return w
}

func gaps(ts []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i].Sub(ts[i-1]))
	}
	return out
}

func TestFlushWaitsStayWithinJitterAndVary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, jitter = 10 * time.Second, 3 * time.Second
		out := &scriptOutput{}
		w := newTestWriter(t, out, BatchOptions{FlushInterval: interval, FlushJitter: jitter})
		// Keep one metric waiting before every flush, so every flush calls Write.
		out.onWrite = func() { _ = w.Write(seqMetric(0)) } // refused once Close has begun
		require.NoError(t, w.Write(seqMetric(0)))
		start := time.Now()
		time.Sleep(40 * (interval + jitter))
		synctest.Wait()
		calls, _ := out.snapshot()
		require.GreaterOrEqual(t, len(calls), 30)
		waits := append([]time.Duration{calls[0].Sub(start)}, gaps(calls)...)
		distinct := map[time.Duration]bool{}
		for i, d := range waits {
			require.GreaterOrEqual(t, d, interval-jitter, "wait %d", i)
			require.LessOrEqual(t, d, interval+jitter, "wait %d", i)
			distinct[d] = true
		}
		require.Greater(t, len(distinct), len(waits)/2, "waits are drawn afresh: %v", waits)
		var below, above int
		for _, d := range waits {
			if d < interval {
				below++
			} else if d > interval {
				above++
			}
		}
		require.Positive(t, below, "the jitter is two-sided")
		require.Positive(t, above, "the jitter is two-sided")
	})
}

func TestFlushWithoutJitterWaitsExactlyTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{}
		w := newTestWriter(t, out, BatchOptions{FlushInterval: 7 * time.Second})
		out.onWrite = func() { _ = w.Write(seqMetric(0)) } // refused once Close has begun
		require.NoError(t, w.Write(seqMetric(0)))
		time.Sleep(36 * time.Second)
		synctest.Wait()
		calls, _ := out.snapshot()
		require.Len(t, calls, 5)
		for _, g := range gaps(calls) {
			require.Equal(t, 7*time.Second, g)
		}
	})
}

func TestFullBatchFlushesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{}
		w := newTestWriter(t, out, BatchOptions{BatchSize: 10, FlushInterval: time.Hour})
		start := time.Now()
		for i := range 9 {
			require.NoError(t, w.Write(seqMetric(i)))
		}
		synctest.Wait()
		calls, _ := out.snapshot()
		require.Empty(t, calls, "nine metrics wait for the interval")
		require.NoError(t, w.Write(seqMetric(9)))
		synctest.Wait()
		calls, written := out.snapshot()
		require.Len(t, calls, 1)
		require.Equal(t, start, calls[0], "no time passed")
		require.Equal(t, seqRange(0, 10), seqs(written))
	})
}

func TestFlushWritesBatchesUntilEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{}
		w := newTestWriter(t, out, BatchOptions{BatchSize: 4, FlushInterval: time.Second, BufferLimit: 100})
		require.NoError(t, w.WriteBatch(metricsRange(0, 3)))
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, w.WriteBatch(metricsRange(3, 14))) // triggers at once
		synctest.Wait()
		_, written := out.snapshot()
		require.Equal(t, seqRange(0, 14), seqs(written))
		out.mu.Lock()
		sizes := []int{}
		for _, b := range out.batches {
			sizes = append(sizes, len(b))
		}
		out.mu.Unlock()
		require.Equal(t, []int{3, 4, 4, 3}, sizes)
	})
}

func metricsRange(from, to int) []Metric {
	var out []Metric
	for i := from; i < to; i++ {
		out = append(out, seqMetric(i))
	}
	return out
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{answer: func(int, []Metric) error { return errors.New("connection refused") }}
		w := newTestWriter(t, out, BatchOptions{FlushInterval: time.Second})
		w.backoff.Rand = func() float64 { return 1 } // pin the full jitter at its ceiling
		require.NoError(t, w.Write(seqMetric(0)))
		time.Sleep(6 * time.Minute)
		synctest.Wait()
		calls, _ := out.snapshot()
		want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
		got := gaps(calls)
		require.GreaterOrEqual(t, len(got), len(want))
		for i, s := range want {
			require.Equal(t, s*time.Second, got[i], "retry %d", i+1)
		}
		require.Equal(t, 1, w.Stats().BufferSize, "the failed metric is still held")
		require.Zero(t, w.Stats().Dropped, "retries never give up on their own")
	})
}

func TestBackoffFullJitterStaysUnderCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{answer: func(int, []Metric) error { return errors.New("503") }}
		w := newTestWriter(t, out, BatchOptions{FlushInterval: time.Second})
		require.NoError(t, w.Write(seqMetric(0)))
		time.Sleep(20 * time.Minute)
		synctest.Wait()
		calls, _ := out.snapshot()
		got := gaps(calls)
		require.Greater(t, len(got), 15)
		ceiling := time.Second
		for i, g := range got {
			require.LessOrEqual(t, g, ceiling, "retry %d", i+1)
			ceiling = min(2*ceiling, 60*time.Second)
		}
	})
}

func TestRetryAfterIsObeyed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{answer: func(call int, _ []Metric) error {
			if call < 3 {
				return Retryable(errors.New("429 too many requests"), 7*time.Second)
			}
			return nil
		}}
		w := newTestWriter(t, out, BatchOptions{FlushInterval: time.Second})
		require.NoError(t, w.Write(seqMetric(0)))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		calls, written := out.snapshot()
		require.Len(t, calls, 4)
		require.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second, 7 * time.Second}, gaps(calls))
		require.Equal(t, []int{0}, seqs(written))
	})
}

func TestPermanentErrorDropsCountsAndCallsOnDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped [][]int
		var dropErrs []error
		out := &scriptOutput{answer: func(call int, _ []Metric) error {
			if call == 0 {
				return fmt.Errorf("http 400: %w", Permanent(ReasonFieldTypeConflict, errors.New("field type conflict")))
			}
			return nil
		}}
		w := newTestWriter(t, out, BatchOptions{BatchSize: 3, FlushInterval: time.Hour,
			OnDrop: func(b []Metric, err error) { dropped = append(dropped, seqs(b)); dropErrs = append(dropErrs, err) }})
		require.NoError(t, w.WriteBatch(metricsRange(0, 6)))
		synctest.Wait()
		_, written := out.snapshot()
		require.Equal(t, []int{3, 4, 5}, seqs(written), "the next batch goes on")
		require.Equal(t, [][]int{{0, 1, 2}}, dropped)
		require.ErrorContains(t, dropErrs[0], "field type conflict")
		st := w.Stats()
		require.Equal(t, int64(3), st.Written)
		require.Equal(t, int64(3), st.Dropped)
		require.Equal(t, map[string]int64{ReasonFieldTypeConflict: 3}, st.DroppedByReason)
		calls, _ := out.snapshot()
		require.Len(t, calls, 2, "a permanent error is never retried")
	})
}

func TestPartialWriteCountsExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var onDrop int
		out := &scriptOutput{answer: func(call int, _ []Metric) error {
			if call == 0 {
				return &PartialWriteError{Dropped: 2, Reason: ReasonBeyondRetention, Err: errors.New("points beyond retention policy dropped=2")}
			}
			return nil
		}}
		w := newTestWriter(t, out, BatchOptions{BatchSize: 5, FlushInterval: time.Hour,
			OnDrop: func([]Metric, error) { onDrop++ }})
		require.NoError(t, w.WriteBatch(metricsRange(0, 10)))
		synctest.Wait()
		st := w.Stats()
		require.Equal(t, int64(10), st.Added)
		require.Equal(t, int64(8), st.Written)
		require.Equal(t, int64(2), st.Dropped)
		require.Equal(t, map[string]int64{ReasonBeyondRetention: 2}, st.DroppedByReason)
		require.Equal(t, 1, onDrop)
		calls, _ := out.snapshot()
		require.Len(t, calls, 2, "a partial write is not retried")
	})
}

func TestPartialWriteSplit(t *testing.T) {
	tests := []struct {
		name                        string
		err                         PartialWriteError
		n, wantWritten, wantDropped int
	}{
		{"dropped only, as InfluxDB reports", PartialWriteError{Dropped: 2}, 10, 8, 2},
		{"written and dropped add up", PartialWriteError{Written: 7, Dropped: 3}, 10, 7, 3},
		{"unaccounted metrics count as dropped", PartialWriteError{Written: 3, Dropped: 2}, 10, 3, 7},
		{"more dropped than sent is clamped", PartialWriteError{Dropped: 12}, 10, 0, 10},
		{"negative dropped is clamped", PartialWriteError{Dropped: -1}, 4, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, d := tc.err.split(tc.n)
			require.Equal(t, tc.wantWritten, w)
			require.Equal(t, tc.wantDropped, d)
		})
	}
}

func TestOutageOverflowDropsExactlyTheOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		down := true
		out := &scriptOutput{answer: func(int, []Metric) error {
			mu.Lock()
			defer mu.Unlock()
			if down {
				return errors.New("connection refused")
			}
			return nil
		}}
		w := newTestWriter(t, out, BatchOptions{BatchSize: 5, BufferLimit: 20, FlushInterval: time.Second})
		for i := range 100 { // one metric every 100ms during a 10s outage
			require.NoError(t, w.Write(seqMetric(i)))
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		down = false
		mu.Unlock()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		_, written := out.snapshot()
		require.Equal(t, seqRange(80, 100), seqs(written), "the newest 20 arrive once, in order")
		st := w.Stats()
		require.Equal(t, int64(80), st.DroppedByReason[ReasonBufferFull])
		require.Equal(t, int64(80), st.Dropped)
		require.Equal(t, int64(20), st.Written)
	})
}

func TestCloseFlushesWithinDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{}
		w, err := NewBatchWriter(out, BatchOptions{FlushInterval: time.Hour, Logger: quietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(metricsRange(0, 5)))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
		_, written := out.snapshot()
		require.Equal(t, seqRange(0, 5), seqs(written))
		require.True(t, out.closed)
		require.ErrorIs(t, w.Write(seqMetric(9)), ErrClosed)
		require.Equal(t, int64(1), w.Stats().DroppedByReason[ReasonShutdown])
	})
}

func TestCloseGivesUpAtDeadlineAndReportsUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &scriptOutput{answer: func(int, []Metric) error { return errors.New("down") }}
		w, err := NewBatchWriter(out, BatchOptions{FlushInterval: time.Hour, Logger: quietLogger(), Name: "influxdb"})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(metricsRange(0, 5)))
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = w.Close(ctx)
		var unsent *UnsentError
		require.ErrorAs(t, err, &unsent)
		require.Equal(t, 5, unsent.Left)
		require.Equal(t, "influxdb", unsent.Output)
		require.Equal(t, 5*time.Second, time.Since(start), "Close keeps retrying until the deadline, no longer")
	})
}

// hangingOutput blocks in Write until its context is cancelled, like a sink that accepted
// the connection and never answered.
type hangingOutput struct{ scriptOutput }

func (o *hangingOutput) Write(ctx context.Context, _ []Metric) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestCloseCancelsHangingWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &hangingOutput{}
		w, err := NewBatchWriter(out, BatchOptions{BatchSize: 2, FlushInterval: time.Hour, Logger: quietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(metricsRange(0, 3)))
		synctest.Wait() // the first batch is now stuck in Write
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		err = w.Close(ctx)
		var unsent *UnsentError
		require.ErrorAs(t, err, &unsent)
		require.Equal(t, 3, unsent.Left, "the cancelled batch is back in the buffer")
		require.Equal(t, 3*time.Second, time.Since(start))
	})
}

func TestBatchWriterRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts BatchOptions
		want string
	}{
		{"jitter equals interval", BatchOptions{FlushInterval: time.Second, FlushJitter: time.Second}, "FlushJitter 1s"},
		{"negative batch", BatchOptions{BatchSize: -1}, "BatchSize -1"},
		{"negative buffer", BatchOptions{BufferLimit: -5}, "BufferLimit -5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewBatchWriter(&scriptOutput{}, tc.opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestBatchWriterManyConcurrentWriters(t *testing.T) {
	out := &scriptOutput{}
	w, err := NewBatchWriter(out, BatchOptions{BatchSize: 100, BufferLimit: 1000, FlushInterval: time.Millisecond, Logger: quietLogger()})
	require.NoError(t, err)
	const writers, each = 16, 5000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				require.NoError(t, w.Write(seqMetric(g*each+i)))
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.Close(ctx))
	st := w.Stats()
	_, written := out.snapshot()
	require.Equal(t, int64(writers*each), st.Added)
	require.Equal(t, st.Added, st.Written+st.Dropped, "every metric is written or counted as dropped")
	require.Equal(t, st.Dropped, st.DroppedByReason[ReasonBufferFull])
	require.Equal(t, int(st.Written), len(written))
	seen := map[int]bool{}
	for _, s := range seqs(written) {
		require.False(t, seen[s], "metric %d written twice", s)
		seen[s] = true
	}
}

// discardOutput accepts every batch and keeps nothing, like a sink that is never the
// bottleneck.
type discardOutput struct{ n atomic.Int64 }

func (d *discardOutput) Connect(context.Context) error { return nil }
func (d *discardOutput) Close() error                  { return nil }
func (d *discardOutput) Write(_ context.Context, b []Metric) error {
	d.n.Add(int64(len(b)))
	return nil
}

// BenchmarkBatchWriterWrite measures Write from one goroutine with the default options, while
// the flush goroutine drains full batches concurrently, as it does in a running agent.
func BenchmarkBatchWriterWrite(b *testing.B) {
	w, err := NewBatchWriter(&discardOutput{}, BatchOptions{Logger: quietLogger()})
	require.NoError(b, err)
	m := seqMetric(1)
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Write(m)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = w.Close(ctx)
}
