package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func newTestWriter(t *testing.T, out morse.Output, opts Options) *Writer {
	t.Helper()
	opts.Logger = testutil.QuietLogger()
	w, err := NewWriter(out, opts)
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
		out := &testutil.ScriptOutput{}
		w := newTestWriter(t, out, Options{FlushInterval: interval, FlushJitter: jitter})
		// Keep one metric waiting before every flush, so every flush calls Write.
		out.OnWrite = func() { _ = w.Write(testutil.SeqMetric(0)) } // refused once Close has begun
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		start := time.Now()
		time.Sleep(40 * (interval + jitter))
		synctest.Wait()
		calls, _ := out.Snapshot()
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
		out := &testutil.ScriptOutput{}
		w := newTestWriter(t, out, Options{FlushInterval: 7 * time.Second})
		out.OnWrite = func() { _ = w.Write(testutil.SeqMetric(0)) } // refused once Close has begun
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		time.Sleep(36 * time.Second)
		synctest.Wait()
		calls, _ := out.Snapshot()
		require.Len(t, calls, 5)
		for _, g := range gaps(calls) {
			require.Equal(t, 7*time.Second, g)
		}
	})
}

func TestFullBatchFlushesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{}
		w := newTestWriter(t, out, Options{BatchSize: 10, FlushInterval: time.Hour})
		start := time.Now()
		for i := range 9 {
			require.NoError(t, w.Write(testutil.SeqMetric(i)))
		}
		synctest.Wait()
		calls, _ := out.Snapshot()
		require.Empty(t, calls, "nine metrics wait for the interval")
		require.NoError(t, w.Write(testutil.SeqMetric(9)))
		synctest.Wait()
		calls, written := out.Snapshot()
		require.Len(t, calls, 1)
		require.Equal(t, start, calls[0], "no time passed")
		require.Equal(t, testutil.SeqRange(0, 10), testutil.Seqs(written))
	})
}

func TestFlushWritesBatchesUntilEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{}
		w := newTestWriter(t, out, Options{BatchSize: 4, FlushInterval: time.Second, BufferLimit: 100})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 3)))
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(3, 14))) // triggers at once
		synctest.Wait()
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, 14), testutil.Seqs(written))
		require.Equal(t, []int{3, 4, 4, 3}, out.BatchSizes())
	})
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("connection refused") }}
		w := newTestWriter(t, out, Options{FlushInterval: time.Second})
		w.retry.policy.Rand = func() float64 { return 1 } // pin the full jitter at its ceiling
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		time.Sleep(6 * time.Minute)
		synctest.Wait()
		calls, _ := out.Snapshot()
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
		out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("503") }}
		w := newTestWriter(t, out, Options{FlushInterval: time.Second})
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		time.Sleep(20 * time.Minute)
		synctest.Wait()
		calls, _ := out.Snapshot()
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
		out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
			if call < 3 {
				return morse.Retryable(errors.New("429 too many requests"), 7*time.Second)
			}
			return nil
		}}
		w := newTestWriter(t, out, Options{FlushInterval: time.Second})
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		calls, written := out.Snapshot()
		require.Len(t, calls, 4)
		require.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second, 7 * time.Second}, gaps(calls))
		require.Equal(t, []int{0}, testutil.Seqs(written))
	})
}

func TestPermanentErrorDropsCountsAndCallsOnDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []DropEvent
		out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
			if call == 0 {
				return fmt.Errorf("http 400: %w", morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("field type conflict")))
			}
			return nil
		}}
		w := newTestWriter(t, out, Options{BatchSize: 3, FlushInterval: time.Hour, OnDrop: collectDrops(&events)})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 6)))
		synctest.Wait()
		_, written := out.Snapshot()
		require.Equal(t, []int{3, 4, 5}, testutil.Seqs(written), "the next batch goes on")
		require.Len(t, events, 1)
		require.Equal(t, []int{0, 1, 2}, testutil.Seqs(events[0].Metrics))
		require.Equal(t, 3, events[0].Count)
		require.Equal(t, morse.ReasonFieldTypeConflict, events[0].Reason)
		require.ErrorContains(t, events[0].Err, "field type conflict")
		st := w.Stats()
		require.Equal(t, int64(3), st.Written)
		require.Equal(t, int64(3), st.Dropped)
		require.Equal(t, map[string]int64{morse.ReasonFieldTypeConflict: 3}, st.DroppedByReason)
		calls, _ := out.Snapshot()
		require.Len(t, calls, 2, "a permanent error is never retried")
	})
}

// collectDrops returns an OnDrop hook that appends a copy of each event to events.
func collectDrops(events *[]DropEvent) func(DropEvent) {
	var mu sync.Mutex
	return func(ev DropEvent) {
		mu.Lock()
		defer mu.Unlock()
		ev.Metrics = append([]morse.Metric(nil), ev.Metrics...)
		*events = append(*events, ev)
	}
}

func TestPartialWriteCountsExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []DropEvent
		out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
			if call == 0 {
				return &morse.PartialWriteError{Dropped: 2, Reason: morse.ReasonBeyondRetention, Err: errors.New("points beyond retention policy dropped=2")}
			}
			return nil
		}}
		w := newTestWriter(t, out, Options{BatchSize: 5, FlushInterval: time.Hour,
			OnDrop: collectDrops(&events)})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 10)))
		synctest.Wait()
		st := w.Stats()
		require.Equal(t, int64(10), st.Added)
		require.Equal(t, int64(8), st.Written)
		require.Equal(t, int64(2), st.Dropped)
		require.Equal(t, map[string]int64{morse.ReasonBeyondRetention: 2}, st.DroppedByReason)
		require.Len(t, events, 1)
		require.Equal(t, 2, events[0].Count)
		require.True(t, events[0].Partial, "InfluxDB does not say which points it dropped")
		require.Equal(t, testutil.SeqRange(0, 5), testutil.Seqs(events[0].Metrics), "the batch they were among")
		var pe *morse.PermanentError
		require.ErrorAs(t, events[0].Err, &pe, "a partial write is permanent too")
		require.Equal(t, morse.ReasonBeyondRetention, pe.Reason)
		calls, _ := out.Snapshot()
		require.Len(t, calls, 2, "a partial write is not retried")
	})
}

func TestPartialWriteSplit(t *testing.T) {
	tests := []struct {
		name                        string
		err                         morse.PartialWriteError
		n, wantWritten, wantDropped int
	}{
		{"dropped only, as InfluxDB reports", morse.PartialWriteError{Dropped: 2}, 10, 8, 2},
		{"written and dropped add up", morse.PartialWriteError{Written: 7, Dropped: 3}, 10, 7, 3},
		{"unaccounted metrics count as dropped", morse.PartialWriteError{Written: 3, Dropped: 2}, 10, 3, 7},
		{"more dropped than sent is clamped", morse.PartialWriteError{Dropped: 12}, 10, 0, 10},
		{"negative dropped is clamped", morse.PartialWriteError{Dropped: -1}, 4, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, d := tc.err.Split(tc.n)
			require.Equal(t, tc.wantWritten, w)
			require.Equal(t, tc.wantDropped, d)
		})
	}
}

func TestOutageOverflowDropsExactlyTheOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		down := true
		out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
			mu.Lock()
			defer mu.Unlock()
			if down {
				return errors.New("connection refused")
			}
			return nil
		}}
		w := newTestWriter(t, out, Options{BatchSize: 5, BufferLimit: 20, FlushInterval: time.Second})
		for i := range 100 { // one metric every 100ms during a 10s outage
			require.NoError(t, w.Write(testutil.SeqMetric(i)))
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		down = false
		mu.Unlock()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(80, 100), testutil.Seqs(written), "the newest 20 arrive once, in order")
		st := w.Stats()
		require.Equal(t, int64(80), st.DroppedByReason[morse.ReasonBufferFull])
		require.Equal(t, int64(80), st.Dropped)
		require.Equal(t, int64(20), st.Written)
	})
}

func TestCloseFlushesWithinDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{}
		w, err := NewWriter(out, Options{FlushInterval: time.Hour, Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 5)))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
		_, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, 5), testutil.Seqs(written))
		require.True(t, out.Closed())
		require.ErrorIs(t, w.Write(testutil.SeqMetric(9)), ErrClosed)
		require.Equal(t, int64(1), w.Stats().DroppedByReason[morse.ReasonShutdown])
	})
}

func TestCloseGivesUpAtDeadlineAndReportsUnsent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("down") }}
		w, err := NewWriter(out, Options{FlushInterval: time.Hour, Logger: testutil.QuietLogger(), Name: "influxdb"})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 5)))
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
type hangingOutput struct{ testutil.ScriptOutput }

func (o *hangingOutput) Write(ctx context.Context, _ []morse.Metric) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestCloseCancelsHangingWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &hangingOutput{}
		w, err := NewWriter(out, Options{BatchSize: 2, FlushInterval: time.Hour, Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 3)))
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

func TestWriterRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"jitter equals interval", Options{FlushInterval: time.Second, FlushJitter: time.Second}, "FlushJitter 1s"},
		{"negative batch", Options{BatchSize: -1}, "BatchSize -1"},
		{"negative buffer", Options{BufferLimit: -5}, "BufferLimit -5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWriter(&testutil.ScriptOutput{}, tc.opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestWriterManyConcurrentWriters(t *testing.T) {
	out := &testutil.ScriptOutput{}
	w, err := NewWriter(out, Options{BatchSize: 100, BufferLimit: 1000, FlushInterval: time.Millisecond, Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	const writers, each = 16, 5000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				require.NoError(t, w.Write(testutil.SeqMetric(g*each+i)))
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.Close(ctx))
	st := w.Stats()
	_, written := out.Snapshot()
	require.Equal(t, int64(writers*each), st.Added)
	require.Equal(t, st.Added, st.Written+st.Dropped, "every metric is written or counted as dropped")
	require.Equal(t, st.Dropped, st.DroppedByReason[morse.ReasonBufferFull])
	require.Equal(t, int(st.Written), len(written))
	seen := map[int]bool{}
	for _, s := range testutil.Seqs(written) {
		require.False(t, seen[s], "metric %d written twice", s)
		seen[s] = true
	}
}

// BenchmarkWriterWrite measures Write from one goroutine with the default options, while
// the flush goroutine drains full batches concurrently, as it does in a running agent.
func BenchmarkWriterWrite(b *testing.B) {
	w, err := NewWriter(&testutil.DiscardOutput{}, Options{Logger: testutil.QuietLogger()})
	require.NoError(b, err)
	m := testutil.SeqMetric(1)
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

// checkedOutput is an output with a config to check, a logger and an Init, like the plugins.
type checkedOutput struct {
	testutil.ScriptOutput
	URL    string
	log    *slog.Logger
	inited int
}

func (o *checkedOutput) Validate() error {
	if !strings.HasPrefix(o.URL, "http") {
		return morse.Errorf("urls", "%q: only http and https are supported", o.URL)
	}
	return nil
}
func (o *checkedOutput) SetLogger(l *slog.Logger) { o.log = l }
func (o *checkedOutput) Init() error              { o.inited++; return nil }

func TestNewWriterPreparesTheOutput(t *testing.T) {
	_, err := NewWriter(&checkedOutput{URL: "udp://db:8089"}, Options{Name: "influxdb"})
	require.ErrorContains(t, err, `batch writer influxdb: output config: urls: "udp://db:8089": only http and https are supported`)

	var logs strings.Builder
	out := &checkedOutput{URL: "http://db:8086"}
	w, err := NewWriter(out, Options{Name: "influxdb", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Close(context.Background()))
	require.Equal(t, 1, out.inited, "Init ran once")
	require.NotNil(t, out.log, "the output got the writer's logger")
	out.log.Info("hello")
	require.Contains(t, logs.String(), "output=influxdb", "the output's logger names it")

	pre := &checkedOutput{URL: "udp://not checked"}
	w, err = NewWriter(pre, Options{Initialized: true})
	require.NoError(t, err, "an output the caller prepared is left as it is")
	require.NoError(t, w.Close(context.Background()))
	require.Zero(t, pre.inited)
}

func TestSchedulerWaitsAndWakesOnAFullBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(10*time.Second, 0, 3, nil)
		defer s.close()
		stop := make(chan struct{})
		size := 0
		buffered := func() bool { return size >= 3 }

		start := time.Now()
		require.True(t, s.wait(stop, buffered))
		require.Equal(t, 10*time.Second, time.Since(start), "no full batch: the interval")

		start = time.Now()
		go func() {
			time.Sleep(time.Second)
			size = 2
			s.added(size) // not full: no wake-up
			time.Sleep(time.Second)
			size = 3
			s.added(size)
		}()
		require.True(t, s.wait(stop, buffered))
		require.Equal(t, 2*time.Second, time.Since(start), "a full batch flushes at once")

		s.added(3) // a stale signal: the buffer was emptied since
		size = 0
		start = time.Now()
		require.True(t, s.wait(stop, buffered))
		require.Equal(t, 10*time.Second, time.Since(start))

		start = time.Now()
		require.True(t, s.sleep(stop, 4*time.Second))
		require.Equal(t, 4*time.Second, time.Since(start))
		close(stop)
		require.False(t, s.wait(stop, buffered))
		require.False(t, s.sleep(stop, time.Hour))
	})
}
