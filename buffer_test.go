package morse

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bufferImpls lists every Buffer implementation; each must pass the same suite.
var bufferImpls = map[string]func(t *testing.T, capacity int) Buffer{
	"memory": func(_ *testing.T, capacity int) Buffer { return NewMemoryBuffer(capacity) },
}

func seqMetric(i int) Metric {
	return NewMetric("m", []Tag{{Key: "seq", Value: strconv.Itoa(i)}}, []Field{{Key: "v", Value: Int(int64(i))}}, time.Unix(0, int64(i)))
}

func seqs(ms []Metric) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		v, _ := m.Field("v")
		out[i] = int(v.Int())
	}
	return out
}

func seqRange(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestBufferSuite(t *testing.T) {
	for name, newBuf := range bufferImpls {
		t.Run(name, func(t *testing.T) {
			t.Run("EvictsOldestAndCountsExactly", func(t *testing.T) { testBufferEviction(t, newBuf) })
			t.Run("BatchTakesOldestInOrder", func(t *testing.T) { testBufferBatchOrder(t, newBuf) })
			t.Run("RejectRestoresAtHead", func(t *testing.T) { testBufferReject(t, newBuf) })
			t.Run("RejectWhileFullEvictsOldest", func(t *testing.T) { testBufferRejectFull(t, newBuf) })
			t.Run("AcceptForgetsBatch", func(t *testing.T) { testBufferAccept(t, newBuf) })
		})
	}
}

func testBufferEviction(t *testing.T, newBuf func(*testing.T, int) Buffer) {
	tests := []struct {
		capacity, added, wantEvicted int
	}{
		{capacity: 5, added: 3, wantEvicted: 0},
		{capacity: 5, added: 5, wantEvicted: 0},
		{capacity: 5, added: 6, wantEvicted: 1},
		{capacity: 5, added: 23, wantEvicted: 18},
		{capacity: 1, added: 4, wantEvicted: 3},
	}
	for _, tc := range tests {
		b := newBuf(t, tc.capacity)
		evicted := 0
		for i := range tc.added {
			evicted += b.Add(seqMetric(i))
		}
		require.Equal(t, tc.wantEvicted, evicted, "capacity %d, added %d", tc.capacity, tc.added)
		require.Equal(t, min(tc.capacity, tc.added), b.Len())
		got := b.Batch(nil, tc.capacity)
		require.Equal(t, seqRange(tc.wantEvicted, tc.added), seqs(got), "the newest survive, in order")
	}
}

func testBufferBatchOrder(t *testing.T, newBuf func(*testing.T, int) Buffer) {
	b := newBuf(t, 10)
	for i := range 7 {
		b.Add(seqMetric(i))
	}
	first := b.Batch(nil, 3)
	require.Equal(t, []int{0, 1, 2}, seqs(first))
	b.Accept(first)
	require.Equal(t, 4, b.Len())
	rest := b.Batch(nil, 100)
	require.Equal(t, []int{3, 4, 5, 6}, seqs(rest))
	b.Accept(rest)
	require.Zero(t, b.Len())
	require.Empty(t, b.Batch(nil, 5))
}

func testBufferReject(t *testing.T, newBuf func(*testing.T, int) Buffer) {
	b := newBuf(t, 10)
	for i := range 6 {
		b.Add(seqMetric(i))
	}
	batch := b.Batch(nil, 4)
	for i := 6; i < 9; i++ { // arrivals while the batch is in flight
		b.Add(seqMetric(i))
	}
	require.Zero(t, b.Reject(batch))
	require.Equal(t, seqRange(0, 9), seqs(b.Batch(nil, 100)), "the batch is back at the head, in order")
}

func testBufferRejectFull(t *testing.T, newBuf func(*testing.T, int) Buffer) {
	b := newBuf(t, 5)
	for i := range 5 {
		b.Add(seqMetric(i))
	}
	batch := b.Batch(nil, 3) // 0,1,2 in flight; 3,4 held
	evicted := 0
	for i := 5; i < 8; i++ { // fills the buffer to 5 again: 3..7
		evicted += b.Add(seqMetric(i))
	}
	require.Zero(t, evicted)
	require.Equal(t, 3, b.Reject(batch), "the three oldest cannot come back")
	require.Equal(t, []int{3, 4, 5, 6, 7}, seqs(b.Batch(nil, 100)))

	// Partly room: two of a three-metric batch fit back.
	b2 := newBuf(t, 5)
	for i := range 5 {
		b2.Add(seqMetric(i))
	}
	batch = b2.Batch(nil, 3)
	b2.Add(seqMetric(5))
	require.Equal(t, 1, b2.Reject(batch))
	require.Equal(t, []int{1, 2, 3, 4, 5}, seqs(b2.Batch(nil, 100)))
}

func testBufferAccept(t *testing.T, newBuf func(*testing.T, int) Buffer) {
	b := newBuf(t, 4)
	for i := range 4 {
		b.Add(seqMetric(i))
	}
	batch := b.Batch(nil, 4)
	b.Accept(batch)
	require.Zero(t, b.Len())
	require.Equal(t, 4, b.Cap())
	for i := 10; i < 14; i++ {
		require.Zero(t, b.Add(seqMetric(i)), "accepted metrics no longer take room")
	}
}

func BenchmarkBufferAdd(b *testing.B) {
	buf := NewMemoryBuffer(DefaultBufferLimit)
	m := seqMetric(1)
	b.ReportAllocs()
	for b.Loop() {
		buf.Add(m)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "metrics/s")
}

func BenchmarkBufferBatch(b *testing.B) {
	buf := NewMemoryBuffer(DefaultBufferLimit)
	m := seqMetric(1)
	dst := make([]Metric, 0, DefaultBatchSize)
	b.ReportAllocs()
	for b.Loop() {
		for range DefaultBatchSize {
			buf.add(m)
		}
		dst = buf.Batch(dst[:0], DefaultBatchSize)
		buf.Accept(dst)
	}
	b.ReportMetric(float64(b.N*DefaultBatchSize)/b.Elapsed().Seconds(), "metrics/s")
}
