package batch

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestMemoryBufferCountsExactly drives two memory buffers that share a budget through
// random adds, one by one and in batches, of metrics of random sizes, line and parsed, and
// random batches taken, accepted and rejected, and checks after every step what the byte
// bound and the budget promise (a third buffer, with an age bound too, shares the budget): each buffer's bytes are the sizes of what it holds and has
// in flight, the budget's are the two buffers', neither bound is passed while there is
// anything to evict, and every metric added is held, in flight, accepted or reported
// evicted. One buffer hands the metrics it evicts to its report and the other only counts
// them, so that both ways of evicting a full ring's oldest metric are taken.
func TestMemoryBufferCountsExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const maxBytes, limit = 40 << 10, 24
	g := NewMemoryBudget(60 << 10)
	now := time.Unix(1000, 0)
	aged := MemoryBounds{MaxBytes: maxBytes, MaxAge: time.Minute, Budget: g, Now: func() time.Time { return now }}
	bufs := []*exactBuffer{
		newExactBuffer(true, limit, MemoryBounds{MaxBytes: maxBytes, Budget: g}),
		newExactBuffer(false, limit, MemoryBounds{MaxBytes: maxBytes, Budget: g}),
		newExactBuffer(false, limit, aged),
	}
	for step := range 20_000 {
		now = now.Add(time.Second)
		x := bufs[rng.IntN(len(bufs))]
		switch op := rng.IntN(10); {
		case op < 4:
			x.buf.Add(randomMetric(rng, step))
			x.added++
		case op < 6:
			ms := make([]morse.Metric, rng.IntN(8))
			for i := range ms {
				ms[i] = randomMetric(rng, step)
			}
			x.buf.AddBatch(ms)
			x.added += len(ms)
		case op < 8:
			if batch := x.buf.Batch(nil, 1+rng.IntN(10)); len(batch) > 0 {
				x.flying = append(x.flying, batch)
			}
		case len(x.flying) > 0:
			i := rng.IntN(len(x.flying))
			batch := x.flying[i]
			x.flying = append(x.flying[:i], x.flying[i+1:]...)
			if op == 8 {
				x.buf.Accept(batch)
				x.accepted += len(batch)
			} else {
				x.buf.Reject(batch)
			}
		}
		var used int64
		for _, x := range bufs {
			used += x.check(t, step)
		}
		require.Equal(t, used, g.Used(), "step %d: the budget holds the buffers' bytes", step)
		if used > g.Limit() {
			for _, x := range bufs {
				require.Zero(t, x.buf.Len(), "step %d: past the budget with metrics left to evict", step)
			}
		}
	}
}

// exactBuffer is a memory buffer with what the test knows of it.
type exactBuffer struct {
	buf      *MemoryBuffer
	maxBytes int64
	mu       sync.Mutex
	evicted  int
	added    int
	accepted int
	flying   [][]morse.Metric
}

func newExactBuffer(keep bool, limit int, bounds MemoryBounds) *exactBuffer {
	x := &exactBuffer{maxBytes: bounds.MaxBytes}
	ev := Eviction{Keep: keep, Report: func(_ string, n int, ms []morse.Metric) {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.evicted += n
	}}
	x.buf = NewBoundedMemoryBuffer(limit, ev, bounds)
	return x
}

// check compares the buffer's bytes with the sizes of what it holds and has in flight, and
// returns them.
func (x *exactBuffer) check(t *testing.T, step int) int64 {
	var held, flying int64
	x.buf.mu.Lock()
	n := x.buf.r.Len()
	for i := range n {
		held += MetricSize(x.buf.r.Peek(i))
	}
	x.buf.mu.Unlock()
	inFlight := 0
	for _, batch := range x.flying {
		inFlight += len(batch)
		for _, m := range batch {
			flying += MetricSize(m)
		}
	}
	bytes := x.buf.Bytes()
	require.Equal(t, held+flying, bytes, "step %d: bytes held and in flight", step)
	if n > 0 {
		require.LessOrEqual(t, bytes, x.maxBytes, "step %d: past the byte bound with metrics left to evict", step)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	require.Equal(t, x.added, n+inFlight+x.accepted+x.evicted, "step %d: every metric accounted for", step)
	return bytes
}

// randomMetric is a line metric or a parsed one, mostly small, so that a ring fills up,
// and now and then of several KiB, so that the byte bound is met.
func randomMetric(rng *rand.Rand, step int) morse.Metric {
	n := rng.IntN(200)
	if rng.IntN(8) == 0 {
		n = rng.IntN(8 << 10)
	}
	pad := strings.Repeat("x", n)
	if rng.IntN(2) == 0 {
		return morse.NewLineMetric(morse.LineText{Text: "m,host=a v=\"" + pad + "\""}, time.Unix(0, int64(step)))
	}
	tags := make([]morse.Tag, rng.IntN(4))
	for i := range tags {
		tags[i] = morse.Tag{Key: "k" + strconv.Itoa(i), Value: pad[:rng.IntN(len(pad)+1)]}
	}
	return morse.NewMetric("m", tags, []morse.Field{{Key: "s", Value: morse.String(pad)}}, time.Unix(0, int64(step)))
}
