package batch

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestStatsFailingSince: Stats.FailingSince is when the first of a run of failed writes
// that are retried failed, it stays there while the retries fail, and it is zero again once a
// write succeeds: what outputs.health reads as "backing off since".
func TestStatsFailingSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
			if call < 3 {
				return morse.Retryable(errors.New("connection refused"), 5*time.Second)
			}
			return nil
		}}
		w, err := NewWriter(out, Options{FlushInterval: time.Second, Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		defer func() { require.NoError(t, w.Close(context.Background())) }()
		require.True(t, w.Stats().FailingSince.IsZero(), "no write has failed yet")
		start := time.Now()
		require.NoError(t, w.Write(testutil.SeqMetric(0)))
		time.Sleep(time.Second) // the first flush, which fails
		synctest.Wait()
		require.Equal(t, start.Add(time.Second), w.Stats().FailingSince)
		time.Sleep(10 * time.Second) // two more failures, five seconds apart
		synctest.Wait()
		calls, _ := out.Snapshot()
		require.Len(t, calls, 3)
		require.Equal(t, start.Add(time.Second), w.Stats().FailingSince, "a retry that fails again keeps the start")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		_, written := out.Snapshot()
		require.Equal(t, []int{0}, testutil.Seqs(written))
		require.True(t, w.Stats().FailingSince.IsZero(), "a write that succeeds ends the run")
	})
}

// servingOutput serves rather than sends (morse.StartConnector); its first connects fail.
type servingOutput struct {
	testutil.ScriptOutput
	sends        bool // connects on its first write, as an output that sends does
	failConnects int
	connects     []time.Time
}

func (o *servingOutput) ConnectsAtStart() bool { return !o.sends }

func (o *servingOutput) Connect(context.Context) error {
	o.connects = append(o.connects, time.Now()) // the flush goroutine alone connects
	if len(o.connects) <= o.failConnects {
		return errors.New("address already in use")
	}
	return nil
}

// TestStartConnectorConnectsWithoutMetrics: an output that serves is connected as soon as
// the writer starts, with nothing to write, and a connect that fails is tried again at the
// retry pace until it succeeds; an ordinary output waits for its first batch.
func TestStartConnectorConnectsWithoutMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &servingOutput{failConnects: 2}
		w, err := NewWriter(out, Options{FlushInterval: time.Hour, RetryInitial: time.Second, RetryMax: time.Second,
			Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, out.connects, 3, "two failed connects, then one that succeeded and no more")
		for i := 1; i < len(out.connects); i++ {
			require.LessOrEqual(t, out.connects[i].Sub(out.connects[i-1]), time.Second, "at the retry pace")
		}
		require.NoError(t, w.Close(context.Background()))
		calls, _ := out.Snapshot()
		require.Empty(t, calls, "nothing was written")

		sender := &servingOutput{sends: true}
		w, err = NewWriter(sender, Options{FlushInterval: time.Hour, Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, w.Close(context.Background()))
		require.Empty(t, sender.connects, "an output that sends connects on its first write")
	})
}
