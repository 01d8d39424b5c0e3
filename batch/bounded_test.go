package batch

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestBoundedMemoryEvictsByBytesAndAge: past buffer_max_bytes or buffer_max_age the oldest
// metrics go, each reported under its reason with exact counts, and a rejected batch keeps
// the age it had, so an outage ages it out as it would have.
func TestBoundedMemoryEvictsByBytesAndAge(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	size := MetricSize(testutil.SeqMetric(10)) // metrics 10..99 are all of this size

	var ev evictions
	b := NewBoundedMemoryBuffer(100, ev.eviction(true), MemoryBounds{MaxBytes: 10 * size, Now: clock})
	b.AddBatch(testutil.SeqMetrics(10, 25))
	require.Equal(t, map[string]int{morse.ReasonBufferBytes: 5}, ev.reasons)
	require.Equal(t, testutil.SeqRange(10, 15), testutil.Seqs(ev.metrics), "the oldest go")
	require.Equal(t, 10*size, b.Bytes())
	require.Equal(t, []int{15}, testutil.Seqs(b.Batch(nil, 100)), "the batches in flight take at most a sixteenth of MaxBytes, or one metric")
	require.Equal(t, testutil.SeqRange(16, 25), takeAll(b))

	var ev2 evictions
	b = NewBoundedMemoryBuffer(100, ev2.eviction(true), MemoryBounds{MaxAge: time.Minute, Now: clock})
	b.AddBatch(testutil.SeqMetrics(0, 4))
	now = now.Add(40 * time.Second)
	b.AddBatch(testutil.SeqMetrics(4, 6))
	require.Equal(t, 40*time.Second, b.OldestAge())
	batch := b.Batch(make([]morse.Metric, 0, 3), 3) // 0..2 in flight
	now = now.Add(30 * time.Second)                 // 0..3 are 70s old, 4..5 30s
	b.Reject(batch)
	require.Equal(t, map[string]int{morse.ReasonTooOld: 4}, ev2.reasons, "the rejected batch kept its age")
	require.Equal(t, []int{0, 1, 2, 3}, testutil.Seqs(ev2.metrics))
	last := b.Batch(nil, 100)
	require.Equal(t, []int{4, 5}, testutil.Seqs(last))
	require.Equal(t, 2*MetricSize(testutil.SeqMetric(4)), b.Bytes(), "a batch in flight is still in memory")
	b.Accept(last)
	require.Zero(t, b.Bytes())
}

// takeAll takes every metric out of b, batch by batch, and accepts them.
func takeAll(b Buffer) []int {
	var seqs []int
	for b.Len() > 0 {
		batch := b.Batch(nil, b.Len())
		b.Accept(batch)
		seqs = append(seqs, testutil.Seqs(batch)...)
	}
	return seqs
}

// TestWriterBoundsItsMemoryBuffer: the options reach the buffer, and its gauges reach the
// writer's self-metrics.
func TestWriterBoundsItsMemoryBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("down") }}
		w := newTestWriter(t, out, Options{BatchSize: 100, FlushInterval: time.Hour,
			BufferMaxBytes: 3 * MetricSize(testutil.SeqMetric(0))})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 5)))
		st := w.Stats()
		require.Equal(t, int64(2), st.DroppedByReason[morse.ReasonBufferBytes])
		require.Equal(t, 3, st.BufferSize)
		require.Equal(t, 3*MetricSize(testutil.SeqMetric(0)), st.BufferBytes)
	})
}
