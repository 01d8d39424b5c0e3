package batch

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestMemoryBudgetEvictsFromTheLargest: two buffers share a budget of 10 metrics' bytes.
// Past it, the buffer that holds the most loses its oldest, counted exactly as
// buffer_bytes, whichever buffer was added to; batches in flight count but stay; a buffer
// that leaves gives its bytes back.
func TestMemoryBudgetEvictsFromTheLargest(t *testing.T) {
	size := MetricSize(testutil.SeqMetric(10)) // metrics 10..99 are all of this size
	g := NewMemoryBudget(10 * size)
	var evA, evB evictions
	a := NewBoundedMemoryBuffer(100, evA.eviction(true), MemoryBounds{Budget: g})
	b := NewBoundedMemoryBuffer(100, evB.eviction(true), MemoryBounds{Budget: g})

	a.AddBatch(testutil.SeqMetrics(10, 18)) // a: 8
	b.AddBatch(testutil.SeqMetrics(50, 52)) // b: 2, the budget full
	require.Equal(t, 10*size, g.Used())
	require.Zero(t, evA.count()+evB.count())

	b.AddBatch(testutil.SeqMetrics(52, 55)) // 3 more in b: a, the largest, pays
	require.Equal(t, map[string]int{morse.ReasonBufferBytes: 3}, evA.reasons)
	require.Equal(t, []int{10, 11, 12}, testutil.Seqs(evA.metrics), "the oldest of the largest")
	require.Zero(t, evB.count(), "the buffer added to is not the largest")
	require.Equal(t, 10*size, g.Used())
	require.Equal(t, 5*size, a.Bytes())
	require.Equal(t, 5*size, b.Bytes())

	inFlight := a.Batch(nil, 100) // 13..17 leave a's ring, not the budget
	require.Len(t, inFlight, 5)
	require.Equal(t, 5*size, a.Bytes())
	b.AddBatch(testutil.SeqMetrics(55, 57)) // b, the only one with metrics held, pays
	require.Equal(t, map[string]int{morse.ReasonBufferBytes: 2}, evB.reasons)
	require.Equal(t, []int{50, 51}, testutil.Seqs(evB.metrics))
	require.Equal(t, 3, evA.count(), "a batch in flight is never evicted")
	a.Accept(inFlight)
	require.Equal(t, 5*size, g.Used())

	a.Add(testutil.SeqMetric(20))
	a.leaveBudget()
	require.Equal(t, 5*size, g.Used(), "a's bytes left with it")
	g.SetLimit(2 * size)
	b.Add(testutil.SeqMetric(60)) // b holds 6; a lower limit is met at the next add
	require.Equal(t, 2*size, g.Used())
	require.Equal(t, map[string]int{morse.ReasonBufferBytes: 6}, evB.reasons)
	require.Equal(t, []int{56, 60}, takeAll(b))
}

// TestMemoryBufferGauges: the memory buffer knows its bytes, the batches in flight
// included, and its oldest metric's age, on an injected clock, as the writer's self-metrics
// report them with the default options.
func TestMemoryBufferGauges(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	b := NewBoundedMemoryBuffer(100, Eviction{}, MemoryBounds{Now: clock})
	require.Zero(t, b.Bytes())
	require.Zero(t, b.OldestAge())
	b.AddBatch(testutil.SeqMetrics(10, 13))
	now = now.Add(5 * time.Second)
	b.Add(testutil.SeqMetric(13))
	require.Equal(t, 4*MetricSize(testutil.SeqMetric(10)), b.Bytes())
	require.Equal(t, 5*time.Second, b.OldestAge())
	batch := b.Batch(nil, 2) // 10 and 11 in flight: still the oldest
	now = now.Add(time.Second)
	require.Equal(t, 6*time.Second, b.OldestAge())
	require.Equal(t, 4*MetricSize(testutil.SeqMetric(10)), b.Bytes())
	b.Accept(batch)
	require.Equal(t, 2*MetricSize(testutil.SeqMetric(10)), b.Bytes())
	require.Equal(t, 6*time.Second, b.OldestAge(), "12 was added with 10")
	b.Accept(b.Batch(nil, 100))
	require.Zero(t, b.Bytes())
	require.Zero(t, b.OldestAge())

	synctest.Test(t, func(t *testing.T) {
		w := newTestWriter(t, &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return errors.New("down") }},
			Options{BatchSize: 100, FlushInterval: time.Hour})
		require.NoError(t, w.WriteBatch(testutil.SeqMetrics(10, 15)))
		time.Sleep(3 * time.Second) // synctest's clock: no real wait
		st := w.Stats()
		require.Equal(t, 5*MetricSize(testutil.SeqMetric(10)), st.BufferBytes)
		require.Equal(t, 3*time.Second, st.BufferOldestAge)
	})
}

// TestDefaultMaxBytesFollowsTheLimit: a buffer that sets no byte bound gets 3 KiB a metric
// of its limit, never less than 32 MiB, so that a metric_buffer_limit raised for ordinary
// metrics is the bound they meet: 100,000 metrics of about 1 KiB fit, evicting none.
func TestDefaultMaxBytesFollowsTheLimit(t *testing.T) {
	require.Equal(t, int64(32<<20), DefaultMaxBytes(0))
	require.Equal(t, int64(32<<20), DefaultMaxBytes(DefaultBufferLimit))
	require.Equal(t, int64(100_000*3<<10), DefaultMaxBytes(100_000))

	o := Options{BufferLimit: 100_000}.withDefaults(nil)
	require.Equal(t, int64(100_000*3<<10), o.BufferMaxBytes)
	var ev evictions
	b := NewBoundedMemoryBuffer(o.BufferLimit, ev.eviction(false), MemoryBounds{MaxBytes: o.BufferMaxBytes})
	m := testutil.SeqMetric(0).WithField("payload", morse.String(strings.Repeat("x", 800)))
	require.Greater(t, MetricSize(m), int64(900))
	for range 100 {
		ms := make([]morse.Metric, 1000)
		for i := range ms {
			ms[i] = m
		}
		b.AddBatch(ms)
	}
	require.Equal(t, 100_000, b.Len())
	require.Zero(t, ev.count())
}
