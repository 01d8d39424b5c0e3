package batch

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// lateOutput blocks in Write, whatever its context says, until the test sends the answer.
type lateOutput struct {
	testutil.ScriptOutput
	answer chan error
}

func (o *lateOutput) Write(context.Context, []morse.Metric) error { return <-o.answer }

// TestAbandonedWriteIsCountedOnce: Close gives up on a write that ignores its cancellation
// and counts its batch as dropped at shutdown, dead-lettered. Whatever the write answers
// when it returns at last, the batch is not counted again, so written + dropped stays equal
// to added; a late success is logged, once.
func TestAbandonedWriteIsCountedOnce(t *testing.T) {
	tests := []struct {
		name   string
		late   error
		logged int
	}{
		{"late success", nil, 1},
		{"late refusal", morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("conflict")), 0},
		{"late failure to retry", errors.New("connection reset"), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "dead.lp")
				dl, err := OpenDeadLetterFile(path, 0, seqLine)
				require.NoError(t, err)
				out := &lateOutput{answer: make(chan error)}
				logs := &testutil.Logs{}
				w, err := NewWriter(out, Options{BatchSize: 4, FlushInterval: time.Hour, WriteTimeout: time.Minute,
					DeadLetter: dl, Logger: logs.Logger()})
				require.NoError(t, err)
				require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 6))) // 4 in flight, 2 buffered
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				var unsent *UnsentError
				require.ErrorAs(t, w.Close(ctx), &unsent)

				out.answer <- tc.late // the abandoned write returns at last
				synctest.Wait()
				st := w.Stats()
				require.Equal(t, map[string]int64{morse.ReasonUnknown: 4, morse.ReasonShutdown: 2}, st.DroppedByReason,
					"the write was sent and had no answer; the buffer's were never sent")
				require.Zero(t, st.Written)
				require.Equal(t, st.Added, st.Written+st.Dropped, "each metric counted once")
				require.Zero(t, st.BufferSize, "nothing went back into the closed writer's buffer")
				late := 0
				for _, l := range logs.Warnings() {
					if strings.Contains(l, "succeeded after all") {
						late++
					}
				}
				require.Equal(t, tc.logged, late)
				require.NoError(t, dl.Close())
				require.Equal(t, int64(6), records(t, readFile(t, path)), "both the flight and the buffer are dead-lettered")
			})
		})
	}
}

// TestShutdownDropsAreDeadLettered: what is left at shutdown is dropped for good, so it goes
// to the dead letter; evictions from a full buffer do not.
func TestShutdownDropsAreDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "dead.lp")
		dl, err := OpenDeadLetterFile(path, 0, seqLine)
		require.NoError(t, err)
		dl.now = func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
		var events []DropEvent
		w, err := NewWriter(&testutil.ScriptOutput{Answer: down}, Options{Name: "sink", BatchSize: 5, BufferLimit: 5,
			FlushInterval: time.Hour, DeadLetter: dl, OnDrop: collectDrops(&events), Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 7))) // 2 evicted
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		require.Error(t, w.Close(ctx))
		require.NoError(t, dl.Close())
		require.Equal(t, map[string]int64{morse.ReasonBufferFull: 2, morse.ReasonShutdown: 5}, w.Stats().DroppedByReason)
		require.Equal(t, "# 2026-11-23T12:00:00Z output=sink reason=shutdown metrics=5 error=\"output sink: 5 metrics left unsent\"\n"+
			"m,seq=2 v=2i\nm,seq=3 v=3i\nm,seq=4 v=4i\nm,seq=5 v=5i\nm,seq=6 v=6i\n", readFile(t, path))
	})
}

// TestAbandonedWriteStaysInTheDiskBuffer: a disk buffer keeps a batch in flight for the next
// start, so Close drops nothing when it gives up on the write, and the late answer books
// nothing either; the next start sends the batch.
func TestAbandonedWriteStaysInTheDiskBuffer(t *testing.T) {
	dir := t.TempDir()
	disk := func() func(int, Eviction) (Buffer, error) {
		return DiskBufferFactory(DiskOptions{Dir: dir, Logger: testutil.QuietLogger()})
	}
	synctest.Test(t, func(t *testing.T) {
		out := &lateOutput{answer: make(chan error)}
		w, err := NewWriter(out, Options{BatchSize: 4, FlushInterval: time.Hour, WriteTimeout: time.Minute,
			NewBuffer: disk(), Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 6)))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx), "nothing is lost: the disk buffer keeps it")
		out.answer <- nil
		synctest.Wait()
		st := w.Stats()
		require.Zero(t, st.Dropped)
		require.Zero(t, st.Written, "the late success is not booked")
	})
	out := &testutil.ScriptOutput{}
	w, err := NewWriter(out, Options{BatchSize: 10, FlushInterval: time.Hour, NewBuffer: disk(), Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, w.Close(context.Background()))
	_, written := out.Snapshot()
	require.Equal(t, testutil.SeqRange(0, 6), testutil.Seqs(written), "the next start sends what the flight held")
}

// silentSink answers the batches that start with a sequence number in refuse at once
// with a failure to retry, as a sink that is down would, and holds every other write until
// its context ends, as a sink that took the request and never answers would.
type silentSink struct {
	testutil.ScriptOutput
	refuse map[int]bool
}

func (o *silentSink) Write(ctx context.Context, b []morse.Metric) error {
	if o.refuse[testutil.Seqs(b)[0]] {
		return errors.New("connection refused")
	}
	<-ctx.Done()
	return ctx.Err()
}

func (o *silentSink) MaxConcurrentWrites() int { return 2 }

// TestCancelledFlightIsReportedOnceAtShutdown: a batch whose write the hard shutdown cancels
// is not put back into the buffer, which filled up meanwhile and would evict it as
// buffer_full: it is reported once, under unknown when the write was sent and had no answer,
// and Close's Left counts it. A batch the sink refused before the shutdown is surely not
// stored: it is reported under shutdown, as the buffer's are.
func TestCancelledFlightIsReportedOnceAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []DropEvent
		out := &silentSink{refuse: map[int]bool{4: true}}
		w, err := NewWriter(out, Options{BatchSize: 4, BufferLimit: 8, FlushInterval: time.Hour, WriteTimeout: time.Minute,
			OnDrop: collectDrops(&events), Logger: testutil.QuietLogger()})
		require.NoError(t, err)
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 8))) // two batches leave at once
		synctest.Wait()
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(8, 16))) // the buffer is full again
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var unsent *UnsentError
		require.ErrorAs(t, w.Close(ctx), &unsent)

		byReason := map[string][]int{}
		total := 0
		for _, ev := range events {
			byReason[ev.Reason] = append(byReason[ev.Reason], testutil.Seqs(ev.Metrics)...)
			total += ev.Count
		}
		require.Equal(t, map[string][]int{
			morse.ReasonUnknown:  testutil.SeqRange(0, 4),
			morse.ReasonShutdown: append(testutil.SeqRange(4, 8), testutil.SeqRange(8, 16)...),
		}, byReason, "each metric once; none evicted as buffer_full")
		require.Equal(t, &UnsentError{Output: unsent.Output, Left: 16, Unknown: 4}, unsent)
		require.Equal(t, 16, total, "OnDrop's total is Left")
		st := w.Stats()
		require.Equal(t, st.Added, st.Written+st.Dropped)
		require.Equal(t, map[string]int64{morse.ReasonUnknown: 4, morse.ReasonShutdown: 12}, st.DroppedByReason)
	})
}
