package batch

import (
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/ring"
)

// BoundedMemoryBuffer is the memory buffer with the disk buffer's further bounds: besides
// the count limit, MaxBytes (the metrics' approximate size in memory) and MaxAge (how long
// a metric has waited in the buffer). Past any of them the oldest go, reported under
// morse.ReasonBufferFull, ReasonBufferBytes or ReasonTooOld. It keeps a time and a size per
// metric, so the writer uses it only when a bound beyond the count is set.
type BoundedMemoryBuffer struct {
	mu       sync.Mutex
	r        *ring.Ring[bounded]
	evict    Eviction
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time
	bytes    int64
	// inFlight keeps the times and sizes of the batches taken, by their backing array (the
	// Writer hands back to Accept and Reject the slices Batch filled), so that a rejected
	// batch comes back with the age it had.
	inFlight map[*morse.Metric][]bounded
}

// bounded is one buffered metric with when it was added and its size.
type bounded struct {
	m    morse.Metric
	at   int64 // Unix nanoseconds
	size int64
}

// MemoryBounds are the bounds of a BoundedMemoryBuffer beyond the count; zero is no bound.
type MemoryBounds struct {
	MaxBytes int64
	MaxAge   time.Duration
	Now      func() time.Time // the clock; time.Now if nil
}

// NewBoundedMemoryBuffer returns a memory buffer of up to limit metrics within bounds.
func NewBoundedMemoryBuffer(limit int, evict Eviction, bounds MemoryBounds) *BoundedMemoryBuffer {
	b := &BoundedMemoryBuffer{r: ring.New[bounded](limit), evict: evict, maxBytes: bounds.MaxBytes,
		maxAge: bounds.MaxAge, now: bounds.Now, inFlight: map[*morse.Metric][]bounded{}}
	if b.now == nil {
		b.now = time.Now
	}
	return b
}

// sizeOf approximates what a metric holds in memory: its text, or its name, tags and
// fields, plus its time.
func sizeOf(m morse.Metric) int64 {
	if lt, ok := m.Line(); ok {
		return int64(len(lt.Text)) + 24
	}
	n := len(m.Name()) + 24
	for _, t := range m.Tags() {
		n += len(t.Key) + len(t.Value)
	}
	for _, f := range m.Fields() {
		n += len(f.Key) + 8 + len(f.Value.Str())
	}
	return int64(n)
}

// Add appends one metric.
func (b *BoundedMemoryBuffer) Add(m morse.Metric) int { return b.AddBatch([]morse.Metric{m}) }

// AddBatch appends metrics, evicting the oldest past any bound.
func (b *BoundedMemoryBuffer) AddBatch(ms []morse.Metric) int {
	var ev evicted
	b.mu.Lock()
	now := b.now().UnixNano()
	for _, m := range ms {
		if b.r.Len() == b.r.Cap() {
			b.popOldest(&ev, morse.ReasonBufferFull)
		}
		e := bounded{m: m, at: now, size: sizeOf(m)}
		b.r.Push(e)
		b.bytes += e.size
	}
	b.enforce(&ev, now)
	n := b.r.Len()
	b.mu.Unlock()
	ev.report(b.evict)
	return n
}

// enforce evicts the oldest metrics past the byte and age bounds.
func (b *BoundedMemoryBuffer) enforce(ev *evicted, now int64) {
	for b.maxBytes > 0 && b.bytes > b.maxBytes && b.r.Len() > 0 {
		b.popOldest(ev, morse.ReasonBufferBytes)
	}
	for b.maxAge > 0 && b.r.Len() > 0 && now-b.r.Peek(0).at > int64(b.maxAge) {
		b.popOldest(ev, morse.ReasonTooOld)
	}
}

func (b *BoundedMemoryBuffer) popOldest(ev *evicted, reason string) {
	var one [1]bounded
	e := b.r.PopFront(one[:0], 1)[0]
	b.bytes -= e.size
	ev.add(reason, e.m, b.evict.keep())
}

// Batch takes up to max of the oldest metrics, first evicting those past MaxAge.
func (b *BoundedMemoryBuffer) Batch(dst []morse.Metric, max int) []morse.Metric {
	var ev evicted
	b.mu.Lock()
	b.enforce(&ev, b.now().UnixNano())
	taken := b.r.PopFront(nil, max)
	start := len(dst)
	for _, e := range taken {
		dst = append(dst, e.m)
		b.bytes -= e.size
	}
	if len(taken) > 0 {
		b.inFlight[&dst[start]] = taken
	}
	b.mu.Unlock()
	ev.report(b.evict)
	return dst
}

// Accept forgets a batch written or dropped for good.
func (b *BoundedMemoryBuffer) Accept(batch []morse.Metric) {
	if len(batch) == 0 {
		return
	}
	b.mu.Lock()
	delete(b.inFlight, &batch[0])
	b.mu.Unlock()
}

// Reject puts the batch back in front with the times it had, then enforces the bounds.
func (b *BoundedMemoryBuffer) Reject(batch []morse.Metric) {
	if len(batch) == 0 {
		return
	}
	var ev evicted
	b.mu.Lock()
	entries, ok := b.inFlight[&batch[0]]
	delete(b.inFlight, &batch[0])
	if !ok { // not a batch this buffer handed out: it waits as of now
		now := b.now().UnixNano()
		for _, m := range batch {
			entries = append(entries, bounded{m: m, at: now, size: sizeOf(m)})
		}
	}
	room := b.r.Cap() - b.r.Len()
	if over := len(entries) - room; over > 0 { // the oldest of all are the batch's first
		for _, e := range entries[:over] {
			ev.add(morse.ReasonBufferFull, e.m, b.evict.keep())
		}
		entries = entries[over:]
	}
	b.r.PushFront(entries)
	for _, e := range entries {
		b.bytes += e.size
	}
	b.enforce(&ev, b.now().UnixNano())
	b.mu.Unlock()
	ev.report(b.evict)
}

// Len is the number of metrics held.
func (b *BoundedMemoryBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.Len()
}

// Cap is the most metrics the buffer holds.
func (b *BoundedMemoryBuffer) Cap() int { return b.r.Cap() }

// Bytes is the approximate size of the metrics held (BufferGauges).
func (b *BoundedMemoryBuffer) Bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes
}

// OldestAge is how long the oldest metric held has waited (BufferGauges).
func (b *BoundedMemoryBuffer) OldestAge() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r.Len() == 0 {
		return 0
	}
	return time.Duration(b.now().UnixNano() - b.r.Peek(0).at)
}

// evicted gathers what one call evicted, by reason in order, to report after the lock.
type evicted struct {
	reasons []string
	counts  []int
	metrics [][]morse.Metric
}

func (e *evicted) add(reason string, m morse.Metric, keep bool) {
	if n := len(e.reasons); n == 0 || e.reasons[n-1] != reason {
		e.reasons = append(e.reasons, reason)
		e.counts = append(e.counts, 0)
		e.metrics = append(e.metrics, nil)
	}
	i := len(e.reasons) - 1
	e.counts[i]++
	if keep {
		e.metrics[i] = append(e.metrics[i], m)
	}
}

func (e *evicted) report(ev Eviction) {
	if ev.Report == nil {
		return
	}
	for i, r := range e.reasons {
		ev.Report(r, e.counts[i], e.metrics[i])
	}
}
