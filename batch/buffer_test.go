package batch

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// bufferImpls lists every Buffer implementation; each must pass the same suite. A new
// implementation is one more line here.
var bufferImpls = map[string]func(t *testing.T, limit int, ev Eviction) Buffer{
	"memory": func(_ *testing.T, limit int, ev Eviction) Buffer { return NewMemoryBuffer(limit, ev) },
	"bounded memory": func(_ *testing.T, limit int, ev Eviction) Buffer {
		return NewBoundedMemoryBuffer(limit, ev, MemoryBounds{MaxBytes: 1 << 30, MaxAge: time.Hour})
	},
	"disk": newSuiteDiskBuffer,
}

// evictions records what a buffer reports evicting.
type evictions struct {
	mu      sync.Mutex
	n       int
	reasons map[string]int
	metrics []morse.Metric
}

func (e *evictions) eviction(keep bool) Eviction {
	return Eviction{Keep: keep, Report: func(reason string, n int, ms []morse.Metric) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.reasons == nil {
			e.reasons = map[string]int{}
		}
		e.n += n
		e.reasons[reason] += n
		e.metrics = append(e.metrics, ms...)
	}}
}

func (e *evictions) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func TestBufferSuite(t *testing.T) {
	for name, newBuf := range bufferImpls {
		t.Run(name, func(t *testing.T) {
			t.Run("EvictsOldestAndReportsExactly", func(t *testing.T) { testBufferEviction(t, newBuf) })
			t.Run("AddBatchEvictsOldestAndReportsExactly", func(t *testing.T) { testBufferBatchEviction(t, newBuf) })
			t.Run("BatchTakesOldestInOrder", func(t *testing.T) { testBufferBatchOrder(t, newBuf) })
			t.Run("RejectRestoresAtHead", func(t *testing.T) { testBufferReject(t, newBuf) })
			t.Run("RejectWhileFullEvictsOldest", func(t *testing.T) { testBufferRejectFull(t, newBuf) })
			t.Run("AcceptForgetsBatch", func(t *testing.T) { testBufferAccept(t, newBuf) })
		})
	}
}

type newBufferFunc = func(*testing.T, int, Eviction) Buffer

func testBufferEviction(t *testing.T, newBuf newBufferFunc) {
	tests := []struct {
		capacity, added, wantEvicted int
	}{
		{capacity: 5, added: 3, wantEvicted: 0},
		{capacity: 5, added: 5, wantEvicted: 0},
		{capacity: 5, added: 6, wantEvicted: 1},
		{capacity: 5, added: 23, wantEvicted: 18},
		{capacity: 1, added: 4, wantEvicted: 3},
	}
	for _, keep := range []bool{false, true} {
		for _, tc := range tests {
			var ev evictions
			b := newBuf(t, tc.capacity, ev.eviction(keep))
			for i := range tc.added {
				require.Equal(t, min(i+1, tc.capacity), b.Add(testutil.SeqMetric(i)), "Add returns the size")
			}
			require.Equal(t, tc.wantEvicted, ev.count(), "capacity %d, added %d", tc.capacity, tc.added)
			if tc.wantEvicted > 0 {
				require.Equal(t, map[string]int{morse.ReasonBufferFull: tc.wantEvicted}, ev.reasons)
			}
			if keep {
				require.Equal(t, testutil.SeqRange(0, tc.wantEvicted), testutil.Seqs(ev.metrics), "the oldest were evicted, in order")
			} else {
				require.Empty(t, ev.metrics, "metrics are kept only when asked")
			}
			require.Equal(t, min(tc.capacity, tc.added), b.Len())
			got := b.Batch(nil, tc.capacity)
			require.Equal(t, testutil.SeqRange(tc.wantEvicted, tc.added), testutil.Seqs(got), "the newest survive, in order")
		}
	}
}

func testBufferBatchEviction(t *testing.T, newBuf newBufferFunc) {
	tests := []struct {
		name              string
		capacity, held, n int
	}{
		{"fits", 10, 3, 7},
		{"evicts some held", 10, 6, 7},
		{"evicts all held", 10, 4, 10},
		{"longer than the buffer", 5, 3, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ev evictions
			b := newBuf(t, tc.capacity, ev.eviction(true))
			for i := range tc.held {
				b.Add(testutil.SeqMetric(i))
			}
			size := b.AddBatch(testutil.SeqMetrics(tc.held, tc.held+tc.n))
			total := tc.held + tc.n
			want := max(0, total-tc.capacity)
			require.Equal(t, min(total, tc.capacity), size)
			require.Equal(t, want, ev.count())
			require.Equal(t, testutil.SeqRange(0, want), testutil.Seqs(ev.metrics))
			require.Equal(t, testutil.SeqRange(want, total), testutil.Seqs(b.Batch(nil, total)))
		})
	}
}

func testBufferBatchOrder(t *testing.T, newBuf newBufferFunc) {
	b := newBuf(t, 10, Eviction{})
	for i := range 7 {
		b.Add(testutil.SeqMetric(i))
	}
	first := b.Batch(nil, 3)
	require.Equal(t, []int{0, 1, 2}, testutil.Seqs(first))
	b.Accept(first)
	require.Equal(t, 4, b.Len())
	rest := b.Batch(nil, 100)
	require.Equal(t, []int{3, 4, 5, 6}, testutil.Seqs(rest))
	b.Accept(rest)
	require.Zero(t, b.Len())
	require.Empty(t, b.Batch(nil, 5))
}

func testBufferReject(t *testing.T, newBuf newBufferFunc) {
	var ev evictions
	b := newBuf(t, 10, ev.eviction(true))
	for i := range 6 {
		b.Add(testutil.SeqMetric(i))
	}
	batch := b.Batch(nil, 4)
	for i := 6; i < 9; i++ { // arrivals while the batch is in flight
		b.Add(testutil.SeqMetric(i))
	}
	b.Reject(batch)
	require.Zero(t, ev.count())
	require.Equal(t, testutil.SeqRange(0, 9), testutil.Seqs(b.Batch(nil, 100)), "the batch is back at the head, in order")
}

func testBufferRejectFull(t *testing.T, newBuf newBufferFunc) {
	var ev evictions
	b := newBuf(t, 5, ev.eviction(true))
	for i := range 5 {
		b.Add(testutil.SeqMetric(i))
	}
	batch := b.Batch(nil, 3) // 0,1,2 in flight; 3,4 held
	for i := 5; i < 8; i++ { // fills the buffer to 5 again: 3..7
		b.Add(testutil.SeqMetric(i))
	}
	require.Zero(t, ev.count())
	b.Reject(batch)
	require.Equal(t, 3, ev.count(), "the three oldest cannot come back")
	require.Equal(t, []int{0, 1, 2}, testutil.Seqs(ev.metrics))
	require.Equal(t, []int{3, 4, 5, 6, 7}, testutil.Seqs(b.Batch(nil, 100)))

	// Partly room: two of a three-metric batch fit back.
	var ev2 evictions
	b2 := newBuf(t, 5, ev2.eviction(true))
	for i := range 5 {
		b2.Add(testutil.SeqMetric(i))
	}
	batch = b2.Batch(nil, 3)
	b2.Add(testutil.SeqMetric(5))
	b2.Reject(batch)
	require.Equal(t, []int{0}, testutil.Seqs(ev2.metrics))
	require.Equal(t, []int{1, 2, 3, 4, 5}, testutil.Seqs(b2.Batch(nil, 100)))
}

func testBufferAccept(t *testing.T, newBuf newBufferFunc) {
	var ev evictions
	b := newBuf(t, 4, ev.eviction(false))
	for i := range 4 {
		b.Add(testutil.SeqMetric(i))
	}
	batch := b.Batch(nil, 4)
	b.Accept(batch)
	require.Zero(t, b.Len())
	require.Equal(t, 4, b.Cap())
	for i := 10; i < 14; i++ {
		b.Add(testutil.SeqMetric(i))
	}
	require.Zero(t, ev.count(), "accepted metrics no longer take room")
}

func BenchmarkBufferAdd(b *testing.B) {
	buf := NewMemoryBuffer(DefaultBufferLimit, Eviction{})
	m := testutil.SeqMetric(1)
	b.ReportAllocs()
	for b.Loop() {
		buf.Add(m)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "metrics/s")
}

// BenchmarkBufferAddLine is BenchmarkBufferAdd with a line metric, as the listeners add
// them: its size is the length of its text.
func BenchmarkBufferAddLine(b *testing.B) {
	buf := NewMemoryBuffer(DefaultBufferLimit, Eviction{})
	m := morse.NewLineMetric(morse.LineText{Text: "cpu,host=web-01,region=eu-west usage_user=1.5,usage_system=0.5,usage_idle=98"}, time.Unix(1, 0))
	b.ReportAllocs()
	for b.Loop() {
		buf.Add(m)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "metrics/s")
}

// BenchmarkBufferAddBounded is BenchmarkBufferAdd with the bounds a writer's memory buffer
// has in the agent: the default byte bound and a memory budget, which every Add tells of
// its bytes.
func BenchmarkBufferAddBounded(b *testing.B) {
	buf := NewBoundedMemoryBuffer(DefaultBufferLimit, Eviction{},
		MemoryBounds{MaxBytes: DefaultBufferMaxBytes, Budget: NewMemoryBudget(1 << 30)})
	m := testutil.SeqMetric(1)
	b.ReportAllocs()
	for b.Loop() {
		buf.Add(m)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "metrics/s")
}

func BenchmarkBufferBatch(b *testing.B) {
	buf := NewMemoryBuffer(DefaultBufferLimit, Eviction{})
	m := testutil.SeqMetric(1)
	dst := make([]morse.Metric, 0, DefaultBatchSize)
	b.ReportAllocs()
	for b.Loop() {
		for range DefaultBatchSize {
			buf.Add(m)
		}
		dst = buf.Batch(dst[:0], DefaultBatchSize)
		buf.Accept(dst)
	}
	b.ReportMetric(float64(b.N*DefaultBatchSize)/b.Elapsed().Seconds(), "metrics/s")
}
