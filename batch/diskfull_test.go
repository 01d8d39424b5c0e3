package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// A full disk: the disk buffer keeps what the disk refuses in memory, within its limit, and
// writes it once the disk takes writes again. Nothing is acknowledged falsely, nothing is
// lost silently, and the segment is whole afterwards. The test runs in a child process with
// a low file-size limit (testutil.FullDiskChild).
func TestDiskBufferDiskFull(t *testing.T) {
	dir := testutil.FullDiskChild(t)
	if dir == "" {
		return // the child ran the test
	}
	clock := newFakeClock()
	var ev evictions
	o := DiskOptions{Dir: dir, Now: clock.Now, RetryInterval: time.Second}
	b := newTestDiskBuffer(t, 150, ev.eviction(true), o)
	testutil.LimitFileSize(t, 1500) // a few records of ten metrics
	addSeq(b, 0, 100, 10)
	require.Equal(t, 100, b.Len(), "what the disk refused is held in memory")
	require.Zero(t, ev.count())
	seg, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	st, err := os.Stat(seg[0])
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(1500))
	onDisk := b.q.Len()
	require.Positive(t, onDisk)
	require.Less(t, onDisk, 100)

	batch := b.Batch(nil, 1000)
	require.Equal(t, testutil.SeqRange(0, 100), testutil.Seqs(batch), "disk first, then memory, in order")
	b.Reject(batch)

	addSeq(b, 100, 200, 10) // past the limit of 150: the oldest go, from disk first
	require.Equal(t, map[string]int{morse.ReasonBufferFull: 50}, ev.reasons)
	require.Equal(t, testutil.SeqRange(0, 50), testutil.Seqs(ev.metrics))

	testutil.LimitFileSize(t, ^uint64(0)) // space frees
	b.Add(testutil.SeqMetric(200))        // too soon: the retry waits RetryInterval
	require.Equal(t, 150, b.Len())
	clock.Add(time.Second)
	b.Add(testutil.SeqMetric(201))
	require.Equal(t, 150, b.q.Len(), "memory went to disk")
	require.NoError(t, b.Close())

	b2 := newTestDiskBuffer(t, 1000, ev.eviction(true), DiskOptions{Dir: dir})
	require.Equal(t, testutil.SeqRange(52, 202), flat(drain(b2, 64)))
	require.Equal(t, 52, ev.count(), "two more went at the limit, none otherwise")
}

// deliveries records the reports of tracking groups.
type deliveries struct {
	mu  sync.Mutex
	got []morse.DeliveryInfo
}

func (d *deliveries) group(id morse.TrackingID) *morse.TrackingGroup {
	return morse.NewTrackingGroup(id, func(di morse.DeliveryInfo) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.got = append(d.got, di)
	})
}

func (d *deliveries) all() []morse.DeliveryInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}

// writeTracked writes SeqMetrics from..to in WriteBatch calls of ten, tracked by g.
func writeTrackedSeq(t *testing.T, w *Writer, g *morse.TrackingGroup, from, to int) {
	for i := from; i < to; i += 10 {
		ms := testutil.SeqMetrics(i, min(i+10, to))
		g.Track(ms)
		require.NoError(t, w.WriteBatch(ms))
	}
}

// newDiskFullWriter is a writer on a disk buffer in dir whose sink is down, in a synctest
// bubble, with the disk limited to a few records of ten metrics.
func newDiskFullWriter(t *testing.T, dir string, limit int, logs *testutil.Logs) *Writer {
	down := func(int, []morse.Metric) error { return errors.New("connection refused") }
	w, err := NewWriter(&testutil.ScriptOutput{Answer: down}, Options{
		Name: "t", BatchSize: 1000, BufferLimit: limit, FlushInterval: time.Hour, Logger: logs.Logger(),
		NewBuffer: DiskBufferFactory(DiskOptions{Dir: dir, RetryInterval: time.Second, Logger: logs.Logger()}),
	})
	require.NoError(t, err)
	t.Cleanup(func() { // within the bubble: a test that fails leaves no goroutine behind
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	testutil.LimitFileSize(t, 1500)
	return w
}

func countContaining(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// While the disk refuses writes, what the disk buffer holds in memory is not done for its
// tracked inputs, holds the listeners back although the sink is down, and is published as
// buffer_memory_fallback, with one warning; once space returns the buffer writes it to disk
// by itself, the groups are delivered and the listeners let go.
func TestWriterDiskFullHoldsBackAndKeepsTracking(t *testing.T) {
	dir := testutil.FullDiskChild(t)
	if dir == "" {
		return // the child ran the test
	}
	synctest.Test(t, func(t *testing.T) {
		var logs testutil.Logs
		var d deliveries
		w := newDiskFullWriter(t, dir, 1000, &logs)
		db := w.buf.(*DiskBuffer)

		g0 := d.group(0)
		writeTrackedSeq(t, w, g0, 0, 10) // fits on the disk
		g0.Done()
		require.Equal(t, []morse.DeliveryInfo{{ID: 0, Delivered: true}}, d.all(), "on disk: done")
		require.False(t, w.HoldsBack())

		g1 := d.group(1)
		writeTrackedSeq(t, w, g1, 10, 210)
		g1.Done()
		synctest.Wait() // the flush loop tried the sink and put the batch back
		require.Len(t, d.all(), 1, "group 1 is held in memory in part: not done")
		held := 210 - db.q.Len()
		require.Positive(t, held)
		require.Less(t, held, 200)
		require.Equal(t, held, db.MemoryFallback())
		require.Equal(t, int64(held), w.Stats().BufferMemoryFallback, "buffer_memory_fallback")

		require.True(t, w.HoldsBack(), "a disk that refuses writes holds the listeners back, the sink down or not")
		require.True(t, w.HoldsInMemory())
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, w.WaitForRoom(ctx), context.DeadlineExceeded)
		require.ErrorIs(t, w.WaitForDisk(ctx), context.DeadlineExceeded)

		time.Sleep(3 * time.Second) // retries that fail
		require.Equal(t, 1, countContaining(logs.Warnings(), "refuses writes"), "warned once: %q", logs.Warnings())

		testutil.LimitFileSize(t, ^uint64(0)) // space returns
		released := make(chan error, 1)
		go func() { released <- w.WaitForDisk(t.Context()) }()
		select {
		case err := <-released:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the disk buffer did not resume by itself")
		}
		synctest.Wait()
		require.Equal(t, []morse.DeliveryInfo{{ID: 0, Delivered: true}, {ID: 1, Delivered: true}}, d.all())
		require.False(t, w.HoldsBack())
		require.Equal(t, 210, db.q.Len(), "all on disk")
		require.Zero(t, w.Stats().BufferMemoryFallback)
		require.Equal(t, 1, countContaining(logs.All(), "takes writes again"))

		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
	})
}

// What the disk buffer held in memory and had to let go, evicted past the limit or lost at
// shutdown with the disk still full, is counted and marks its groups not delivered.
func TestWriterDiskFullLosesTrackedNotDelivered(t *testing.T) {
	dir := testutil.FullDiskChild(t)
	if dir == "" {
		return // the child ran the test
	}
	synctest.Test(t, func(t *testing.T) {
		var logs testutil.Logs
		var d deliveries
		w := newDiskFullWriter(t, dir, 40, &logs)
		db := w.buf.(*DiskBuffer)
		g := d.group(1)
		writeTrackedSeq(t, w, g, 0, 100)
		g.Done()
		synctest.Wait()
		require.Empty(t, d.all(), "held in memory: not done")
		st := w.Stats()
		require.Equal(t, int64(60), st.DroppedByReason[morse.ReasonBufferFull], "the limit holds for memory and disk together")
		require.Equal(t, 40, st.BufferSize)
		held := db.MemoryFallback()
		require.Positive(t, held)

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
		require.Equal(t, []morse.DeliveryInfo{{ID: 1, Delivered: false}}, d.all())
		require.Equal(t, int64(held), w.Stats().DroppedByReason[morse.ReasonShutdown], "what memory held is counted lost")
	})
}
