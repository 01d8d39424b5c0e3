package batch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/backoff"
	"github.com/morse-agent/morse/internal/testutil"
)

// hungOnce hangs its first `hangs` writes until their context ends, like a sink that
// accepted the connection and never answered, then writes normally.
type hungOnce struct {
	testutil.ScriptOutput
	hangs   int32
	calls   atomic.Int32
	timeout time.Duration
}

func (o *hungOnce) Write(ctx context.Context, batch []morse.Metric) error {
	if o.calls.Add(1) <= o.hangs {
		<-ctx.Done()
		return ctx.Err()
	}
	return o.ScriptOutput.Write(ctx, batch)
}

func (o *hungOnce) WriteTimeout() time.Duration { return o.timeout }

func TestTimeoutSenderBoundsEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &hungOnce{hangs: 1}
		s := &timeoutSender{next: &outputSender{out: out}, timeout: 5 * time.Second}
		start := time.Now()
		err := s.send(context.Background(), testutil.SeqMetrics(0, 3))
		require.Equal(t, 5*time.Second, time.Since(start), "the attempt ends at the timeout")
		require.ErrorIs(t, err, ErrWriteTimeout)
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "a timed-out attempt is retried")
		require.NoError(t, s.send(context.Background(), testutil.SeqMetrics(0, 3)), "the next attempt gets a fresh deadline")
	})
}

func TestTimeoutSenderLeavesOtherErrorsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := morse.Permanent(morse.ReasonUnableToParse, errors.New("unable to parse"))
		out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return refused }}
		s := &timeoutSender{next: &outputSender{out: out}, timeout: time.Second}
		require.Equal(t, refused, s.send(context.Background(), testutil.SeqMetrics(0, 1)))

		// A caller that gives up is not a timeout of the attempt.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := (&timeoutSender{next: &outputSender{out: &hungOnce{hangs: 1}}, timeout: time.Hour}).send(ctx, nil)
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, ErrWriteTimeout)
	})
}

func TestRetrySenderChoosesTheDelay(t *testing.T) {
	tests := []struct {
		name   string
		answer error
		want   []time.Duration // the delay chosen after each of three attempts; 0 for none
	}{
		{"success resets", nil, []time.Duration{0, 0, 0}},
		{"backoff doubles", errors.New("connection refused"), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
		{"Retry-After wins", morse.Retryable(errors.New("429"), 7*time.Second), []time.Duration{7 * time.Second, 7 * time.Second, 7 * time.Second}},
		{"permanent is not retried", morse.Permanent("x", errors.New("no")), []time.Duration{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return tc.answer }}
			p := backoff.New(time.Second, time.Minute)
			p.Rand = func() float64 { return 1 }
			s := &retrySender{next: &outputSender{out: out}, policy: p}
			for i, want := range tc.want {
				err := s.send(context.Background(), testutil.SeqMetrics(0, 1))
				var re *retryError
				if want == 0 {
					require.False(t, errors.As(err, &re), "attempt %d", i)
					continue
				}
				require.ErrorAs(t, err, &re, "attempt %d", i)
				require.Equal(t, want, re.delay, "attempt %d", i)
				require.Equal(t, tc.answer, errors.Unwrap(err), "the sink's error is kept")
			}
		})
	}
}

// TestWriterRetriesAHungWriteAndClosesInTime: the per-attempt timeout, taken from the
// output's own timeout, cancels a hung write; the batch is retried and arrives, and a
// writer whose sink hangs for good still closes within Close's deadline.
func TestWriterRetriesAHungWriteAndClosesInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &hungOnce{hangs: 2, timeout: 3 * time.Second}
		w := newTestWriter(t, out, Options{BatchSize: 5, FlushInterval: time.Hour})
		w.retry.policy.Rand = func() float64 { return 1 }
		start := time.Now()
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 5)))
		synctest.Wait()
		// Two attempts of 3s, each followed by a backoff of 1s and 2s, then success.
		time.Sleep(time.Minute)
		calls, written := out.Snapshot()
		require.Equal(t, testutil.SeqRange(0, 5), testutil.Seqs(written))
		require.Len(t, calls, 1)
		require.Equal(t, 3*time.Second+time.Second+3*time.Second+2*time.Second, calls[0].Sub(start))
		require.Equal(t, int64(2), w.Stats().WriteErrors)

		hung := &hungOnce{hangs: 1 << 30, timeout: time.Hour}
		w2, err := NewWriter(hung, Options{BatchSize: 2, FlushInterval: time.Hour, Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w2.WriteBatch(testutil.SeqMetrics(0, 2)))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start = time.Now()
		var unsent *UnsentError
		require.ErrorAs(t, w2.Close(ctx), &unsent)
		require.Equal(t, 2*time.Second, time.Since(start), "Close returns at its deadline")
		require.Equal(t, 2, unsent.Left)
	})
}

// TestRetryLimitsByClass: retries never end by default; with limits, a batch that has
// failed for that long is dropped under retry_expired (and dead-lettered), unauthorized
// failures by their own limit.
func TestRetryLimitsByClass(t *testing.T) {
	unauthorized := fmt.Errorf("%w: 403 user bob may not write", morse.ErrUnauthorized)
	tests := []struct {
		name         string
		answer       error
		maxAge, auth time.Duration
		expireAfter  time.Duration // 0: never within the test
	}{
		{"no limit: forever", errors.New("connection refused"), 0, 0, 0},
		{"a limit for every retryable error", errors.New("connection refused"), 10 * time.Minute, 0, 10 * time.Minute},
		{"unauthorized has its own", unauthorized, time.Hour, 5 * time.Minute, 5 * time.Minute},
		{"unauthorized falls back to the general limit", unauthorized, 7 * time.Minute, 0, 7 * time.Minute},
		{"the unauthorized limit leaves other errors alone", errors.New("503"), 0, 5 * time.Minute, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var events []DropEvent
				out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return tc.answer }}
				w := newTestWriter(t, out, Options{BatchSize: 1, FlushInterval: time.Second,
					RetryMaxAge: tc.maxAge, UnauthorizedRetryMaxAge: tc.auth, OnDrop: collectDrops(&events)})
				start := time.Now()
				require.NoError(t, w.Write(testutil.SeqMetric(0)))
				time.Sleep(30 * time.Minute)
				synctest.Wait()
				if tc.expireAfter == 0 {
					require.Empty(t, events)
					require.Equal(t, 1, w.Stats().BufferSize)
					return
				}
				require.Len(t, events, 1)
				require.Equal(t, morse.ReasonRetryExpired, events[0].Reason)
				require.ErrorIs(t, events[0].Err, tc.answer)
				calls, _ := out.Snapshot()
				last := calls[len(calls)-1].Sub(start)
				require.GreaterOrEqual(t, last, tc.expireAfter)
				require.Less(t, last, tc.expireAfter+time.Minute, "dropped at the first failure past the limit")
			})
		})
	}
}

// TestRetryAgesArePerBatchAndClass: each batch is held to its limit from its own first
// failure, not from the first failure of the sink; and an unauthorized failure that follows
// a long outage gets its own limit from the first unauthorized answer.
func TestRetryAgesArePerBatchAndClass(t *testing.T) {
	t.Run("each batch its own age", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var events []DropEvent
			out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("503") }}
			w := newTestWriter(t, out, Options{BatchSize: 1, FlushInterval: time.Second,
				RetryMaxAge: 10 * time.Minute, RetryMax: time.Minute, OnDrop: collectDrops(&events)})
			require.NoError(t, w.Write(testutil.SeqMetric(0)))
			time.Sleep(9 * time.Minute)
			require.NoError(t, w.Write(testutil.SeqMetric(1)))
			time.Sleep(6 * time.Minute) // 15 minutes in
			synctest.Wait()
			st := w.Stats() // events is read only at the end: it is the flush loop's until then
			require.Equal(t, int64(1), st.DroppedByReason[morse.ReasonRetryExpired], "the first batch is past its limit, the second is not")
			require.Equal(t, 1, st.BufferSize)
			time.Sleep(10 * time.Minute) // 25 minutes in: the second failed first at about 10
			synctest.Wait()
			require.Zero(t, w.Stats().BufferSize)
			require.Len(t, events, 2)
			require.Equal(t, morse.ReasonRetryExpired, events[1].Reason)
		})
	})
	t.Run("unauthorized after an outage", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var events []DropEvent
			start := time.Now()
			unauthorized := fmt.Errorf("%w: 401", morse.ErrUnauthorized)
			out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error {
				if time.Since(start) < 20*time.Minute {
					return errors.New("503")
				}
				return unauthorized
			}}
			w := newTestWriter(t, out, Options{BatchSize: 1, FlushInterval: time.Second, RetryMax: time.Minute,
				UnauthorizedRetryMaxAge: 5 * time.Minute, OnDrop: collectDrops(&events)})
			require.NoError(t, w.Write(testutil.SeqMetric(0)))
			time.Sleep(23 * time.Minute)
			synctest.Wait()
			require.Zero(t, w.Stats().Dropped, "three minutes of 401 after twenty of 503 are within the limit")
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			require.Len(t, events, 1)
			require.ErrorIs(t, events[0].Err, morse.ErrUnauthorized)
		})
	})
}

// ignoringOutput blocks in Write until release closes, whatever its context says.
type ignoringOutput struct {
	testutil.ScriptOutput
	release chan struct{}
}

func (o *ignoringOutput) Write(context.Context, []morse.Metric) error {
	<-o.release
	return nil
}

// TestCloseAbandonsAWriteThatIgnoresItsContext: the hard shutdown waits a moment for a
// cancelled write, then closes without it, so that the process can exit, and counts what the
// write held as unknown and what the buffer held as dropped at shutdown.
func TestCloseAbandonsAWriteThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &ignoringOutput{release: make(chan struct{})}
		var events []DropEvent
		w, err := NewWriter(out, Options{BatchSize: 4, FlushInterval: time.Hour, WriteTimeout: time.Minute,
			OnDrop: collectDrops(&events), Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 6))) // 4 in flight, 2 buffered
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		var unsent *UnsentError
		require.ErrorAs(t, w.Close(ctx), &unsent)
		require.Equal(t, time.Second+abandonAfter, time.Since(start))
		require.Equal(t, 6, unsent.Left, "the 4 in flight and the 2 buffered")
		require.Equal(t, 4, unsent.Unknown, "the write was sent and never answered")
		st := w.Stats()
		require.Equal(t, map[string]int64{morse.ReasonUnknown: 4, morse.ReasonShutdown: 2}, st.DroppedByReason)
		var sum int
		for _, ev := range events {
			sum += ev.Count
		}
		require.Equal(t, 6, sum)
		close(out.release)
	})
}
