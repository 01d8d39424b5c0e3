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

// TestDropEventsAccountForEveryLoss: one case per reason. Each loss reaches OnDrop once,
// with the metrics really lost where they are known, and across all events the lost counts
// add up to metrics_dropped exactly, by reason too.
func TestDropEventsAccountForEveryLoss(t *testing.T) {
	fieldConflict := morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("field type conflict"))
	tests := []struct {
		name    string
		answer  func(call int, batch []morse.Metric) error
		opts    Options
		send    int // metrics written, 5 to a batch
		close   time.Duration
		reason  string
		lost    []int // the metrics reported lost, in order
		count   int
		partial bool
	}{
		{name: "eviction", answer: up, opts: Options{BufferLimit: 10}, send: 25,
			reason: morse.ReasonBufferFull, lost: testutil.SeqRange(0, 15), count: 15},
		{name: "permanent", answer: failFirst(fieldConflict), send: 10,
			reason: morse.ReasonFieldTypeConflict, lost: testutil.SeqRange(0, 5), count: 5},
		{name: "partial, which unknown", answer: failFirst(&morse.PartialWriteError{Dropped: 2, Reason: morse.ReasonBeyondRetention, Err: errors.New("dropped=2")}),
			send: 10, reason: morse.ReasonBeyondRetention, lost: testutil.SeqRange(0, 5), count: 2, partial: true},
		{name: "routed, sub-request refused", answer: failFirst(&morse.PartialWriteError{Dropped: 2, Reason: morse.ReasonDatabaseNotFound, Indices: []int{1, 3}, Err: errors.New("database not found")}),
			send: 10, reason: morse.ReasonDatabaseNotFound, lost: []int{1, 3}, count: 2},
		{name: "left at shutdown", answer: down, send: 7, close: 3 * time.Second,
			reason: morse.ReasonShutdown, lost: testutil.SeqRange(0, 7), count: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var events []DropEvent
				opts := tc.opts
				opts.BatchSize, opts.FlushInterval, opts.OnDrop, opts.Name = 5, time.Hour, collectDrops(&events), "sink"
				opts.Logger = testutil.QuietLogger()
				w, err := NewWriter(&testutil.ScriptOutput{Answer: tc.answer}, opts)
				require.NoError(t, err)
				require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, tc.send)))
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), tc.close+time.Nanosecond)
				defer cancel()
				_ = w.Close(ctx)

				st := w.Stats()
				var sum int
				byReason := map[string]int64{}
				var lost []int
				for _, ev := range events {
					require.Equal(t, "sink", ev.Output)
					sum += ev.Count
					byReason[ev.Reason] += int64(ev.Count)
					lost = append(lost, testutil.Seqs(ev.Metrics)...)
					require.Equal(t, tc.partial, ev.Partial)
				}
				require.Equal(t, st.Dropped, int64(sum), "OnDrop's counts add up to metrics_dropped")
				require.Equal(t, st.DroppedByReason, byReason)
				require.Equal(t, map[string]int64{tc.reason: int64(tc.count)}, byReason)
				require.Equal(t, tc.lost, lost)
				require.Equal(t, int64(tc.send), st.Written+st.Dropped, "every metric is written or counted")
			})
		})
	}
}

func up(int, []morse.Metric) error { return nil }

func down(int, []morse.Metric) error { return errors.New("connection refused") }

func failFirst(err error) func(int, []morse.Metric) error {
	return func(call int, _ []morse.Metric) error {
		if call == 0 {
			return err
		}
		return nil
	}
}
