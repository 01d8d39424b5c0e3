package batch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// newTestDiskBuffer opens a disk buffer in a directory of its own (o.Dir, or a new one),
// closed when the test ends.
func newTestDiskBuffer(t *testing.T, limit int, ev Eviction, o DiskOptions) *DiskBuffer {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Logger == nil {
		o.Logger = testutil.QuietLogger()
	}
	b, err := NewDiskBuffer(limit, ev, o)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// newSuiteDiskBuffer is the disk buffer with default options, for the buffer suite.
func newSuiteDiskBuffer(t *testing.T, limit int, ev Eviction) Buffer {
	return newTestDiskBuffer(t, limit, ev, DiskOptions{})
}

// fakeClock is a clock that tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1700000000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// addSeq adds SeqMetric(from) up to, not including, to in batches of per.
func addSeq(b Buffer, from, to, per int) {
	for i := from; i < to; i += per {
		b.AddBatch(testutil.SeqMetrics(i, min(i+per, to)))
	}
}

// drain takes batches of max until the buffer is empty, accepting each.
func drain(b Buffer, max int) (batches [][]int) {
	for {
		batch := b.Batch(nil, max)
		if len(batch) == 0 {
			return batches
		}
		batches = append(batches, testutil.Seqs(batch))
		b.Accept(batch)
	}
}

func flat(batches [][]int) []int {
	var out []int
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

func TestDiskBufferRestartKeepsWhatWasNotAccepted(t *testing.T) {
	for _, newest := range []bool{false, true} {
		t.Run(fmt.Sprintf("newest first %v", newest), func(t *testing.T) {
			dir := t.TempDir()
			var ev evictions
			o := DiskOptions{Dir: dir, NewestFirst: newest}
			b := newTestDiskBuffer(t, 1000, ev.eviction(true), o)
			addSeq(b, 0, 100, 7)
			done := b.Batch(nil, 30)
			b.Accept(done)
			inFlight := b.Batch(nil, 20) // never settled: a crash, or Close during a write
			require.Len(t, inFlight, 20)
			require.Equal(t, 50, b.Len())
			require.NoError(t, b.Close())
			require.Zero(t, ev.count(), "what stays on disk is not dropped")

			b2 := newTestDiskBuffer(t, 1000, ev.eviction(true), o)
			require.Equal(t, 70, b2.Len())
			got := flat(drain(b2, 1000))
			want := testutil.SeqRange(30, 100)
			if newest {
				want = testutil.SeqRange(0, 70)
			}
			require.ElementsMatch(t, want, got)
			require.Zero(t, ev.count())
		})
	}
}

func TestDiskBufferCapsEvictOldestWithExactCounts(t *testing.T) {
	clock := newFakeClock()
	recordBytes := func() int64 { // the size of a record of 10 two-digit SeqMetrics
		b := newTestDiskBuffer(t, 100, Eviction{}, DiskOptions{})
		b.AddBatch(testutil.SeqMetrics(90, 100))
		return b.Bytes()
	}()
	tests := []struct {
		name       string
		limit      int
		o          DiskOptions
		wantReason string
		wantEvict  []int
		age        time.Duration // the clock moves this much after each batch
	}{
		{"count", 45, DiskOptions{}, morse.ReasonBufferFull, testutil.SeqRange(0, 55), 0},
		{"bytes", 1000, DiskOptions{MaxBytes: 4*recordBytes + 10}, morse.ReasonBufferBytes, testutil.SeqRange(0, 60), 0},
		// Batch i arrives at 10i s and the clock ends at 100 s: 0 to 60 s are over 35 s old.
		{"age", 1000, DiskOptions{MaxAge: 35 * time.Second}, morse.ReasonTooOld, testutil.SeqRange(0, 70), 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ev evictions
			tc.o.Now = clock.Now
			b := newTestDiskBuffer(t, tc.limit, ev.eviction(true), tc.o)
			for i := 0; i < 100; i += 10 {
				b.AddBatch(testutil.SeqMetrics(i, i+10))
				clock.Add(tc.age)
			}
			b.Batch(nil, 0) // Batch enforces the age bound too
			require.Equal(t, map[string]int{tc.wantReason: len(tc.wantEvict)}, ev.reasons)
			require.Equal(t, tc.wantEvict, testutil.Seqs(ev.metrics), "the oldest, in order")
			require.Equal(t, 100-len(tc.wantEvict), b.Len())
			require.Equal(t, testutil.SeqRange(len(tc.wantEvict), 100), flat(drain(b, 7)))
		})
	}
}

func TestDiskBufferNewestFirstLosesAndRepeatsNothing(t *testing.T) {
	var ev evictions
	b := newTestDiskBuffer(t, 10000, ev.eviction(true), DiskOptions{NewestFirst: true})
	addSeq(b, 0, 1000, 100) // the backlog of an outage
	first := b.Batch(nil, 250)
	require.Equal(t, testutil.SeqRange(750, 1000), testutil.Seqs(first), "the newest come first, in order")
	b.Reject(first) // the sink is still down
	again := b.Batch(nil, 250)
	require.Equal(t, testutil.SeqRange(750, 1000), testutil.Seqs(again))
	addSeq(b, 1000, 1030, 10) // live data arrives during the write
	b.Accept(again)

	var got, firstAfter []int
	next := 1030
	for {
		batch := b.Batch(nil, 100)
		if len(batch) == 0 {
			break
		}
		if firstAfter == nil {
			firstAfter = testutil.Seqs(batch)
		}
		got = append(got, testutil.Seqs(batch)...)
		if next < 1100 { // live data keeps coming, and goes first
			addSeq(b, next, next+10, 10)
			next += 10
		}
		b.Accept(batch)
	}
	require.Equal(t, testutil.SeqRange(680, 750), firstAfter[:70], "the newest of the backlog")
	require.Equal(t, testutil.SeqRange(1000, 1030), firstAfter[70:], "and what arrived meanwhile")
	all := append(testutil.SeqRange(750, 1000), got...)
	require.ElementsMatch(t, testutil.SeqRange(0, 1100), all, "every metric once")
	require.Zero(t, ev.count())
}

func TestDiskBufferCountsCorruptRecords(t *testing.T) {
	dir := t.TempDir()
	b := newTestDiskBuffer(t, 1000, Eviction{}, DiskOptions{Dir: dir})
	addSeq(b, 0, 50, 10)
	require.NoError(t, b.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff // inside the payload of the third record of five, of like sizes
	require.NoError(t, os.WriteFile(segs[0], data, 0o600))

	var ev evictions
	b2 := newTestDiskBuffer(t, 1000, ev.eviction(true), DiskOptions{Dir: dir})
	require.Equal(t, map[string]int{morse.ReasonCorrupt: 10}, ev.reasons, "counted by its header")
	require.Equal(t, append(testutil.SeqRange(0, 20), testutil.SeqRange(30, 50)...), flat(drain(b2, 100)))
}

func TestDiskBufferFlightsSettledOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	b := newTestDiskBuffer(t, 1000, Eviction{}, DiskOptions{Dir: dir})
	addSeq(b, 0, 30, 10)
	a, c := b.Batch(nil, 10), b.Batch(nil, 10)
	b.Accept(c) // as the flusher settles: accepts first, then the retries
	b.Reject(a)
	require.Equal(t, 20, b.Len())
	require.Equal(t, [][]int{append(testutil.SeqRange(0, 10), testutil.SeqRange(20, 30)...)}, drain(b, 100))
	require.NoError(t, b.Close())
	b2 := newTestDiskBuffer(t, 1000, Eviction{}, DiskOptions{Dir: dir})
	require.Zero(t, b2.Len())
}

func TestDiskBufferSelfMetricInputs(t *testing.T) {
	clock := newFakeClock()
	b := newTestDiskBuffer(t, 1000, Eviction{}, DiskOptions{Now: clock.Now})
	require.Zero(t, b.OldestAge())
	require.Zero(t, b.Bytes())
	b.AddBatch(testutil.SeqMetrics(0, 10))
	clock.Add(3 * time.Second)
	b.AddBatch(testutil.SeqMetrics(10, 20))
	clock.Add(time.Second)
	require.Equal(t, 4*time.Second, b.OldestAge())
	require.Positive(t, b.Bytes())
	b.Accept(b.Batch(nil, 10))
	require.Equal(t, time.Second, b.OldestAge())
}

func TestDiskBufferThroughTheWriter(t *testing.T) {
	out := &testutil.DiscardOutput{}
	w, err := NewWriter(out, Options{
		BatchSize: 100, FlushInterval: time.Hour, MaxInFlight: 4, Logger: testutil.QuietLogger(),
		NewBuffer: DiskBufferFactory(DiskOptions{Dir: t.TempDir(), Logger: testutil.QuietLogger()}),
	})
	require.NoError(t, err)
	for i := 0; i < 5000; i += 50 {
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(i, i+50)))
	}
	require.NoError(t, w.Close(context.Background()))
	require.Equal(t, int64(5000), out.Written())
	require.Zero(t, w.Stats().Dropped)
}
