package morse

import (
	"sync"

	"github.com/morse-agent/morse/internal/ring"
)

// Buffer holds an output's metrics between the inputs and the flush loop. Implementations
// must be safe for concurrent use: inputs add while the flush loop takes batches.
//
// A batch taken with Batch is in flight until it is either accepted (written or dropped for
// good) or rejected (the write failed and will be retried). A rejected batch goes back to the
// head in its original order.
type Buffer interface {
	// Add appends metrics and returns how many of the oldest were evicted to make room.
	Add(ms ...Metric) (evicted int)
	// Batch takes up to max of the oldest metrics, appending them to dst.
	Batch(dst []Metric, max int) []Metric
	// Accept ends the flight of batch for good.
	Accept(batch []Metric)
	// Reject returns batch to the head and reports how many metrics were evicted because
	// the buffer filled up while the batch was in flight.
	Reject(batch []Metric) (evicted int)
	// Len is the number of metrics held, not counting a batch in flight.
	Len() int
	// Cap is the most metrics the buffer holds.
	Cap() int
}

// MemoryBuffer is the default Buffer: a ring in memory that evicts the oldest metric when
// full.
type MemoryBuffer struct {
	mu sync.Mutex
	r  *ring.Ring[Metric]
}

// NewMemoryBuffer returns a buffer of the given capacity.
func NewMemoryBuffer(capacity int) *MemoryBuffer {
	return &MemoryBuffer{r: ring.New[Metric](capacity)}
}

// Add appends metrics, evicting the oldest when full.
func (b *MemoryBuffer) Add(ms ...Metric) int {
	b.mu.Lock()
	n := b.r.PushAll(ms)
	b.mu.Unlock()
	return n
}

// add appends one metric and reports whether one was evicted and the new length. It spares
// the BatchWriter's hot path the variadic slice and a second lock for the length.
func (b *MemoryBuffer) add(m Metric) (evicted bool, n int) {
	b.mu.Lock()
	evicted = b.r.Push(m)
	n = b.r.Len()
	b.mu.Unlock()
	return evicted, n
}

// Batch takes up to max of the oldest metrics out of the ring. While they are in flight the
// ring has room for new metrics, so inputs are not slowed by a slow write.
func (b *MemoryBuffer) Batch(dst []Metric, max int) []Metric {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.PopFront(dst, max)
}

// Accept does nothing: Batch already removed the metrics.
func (b *MemoryBuffer) Accept([]Metric) {}

// Reject puts the batch back in front; if the ring filled up meanwhile, the oldest metrics,
// which are the first of the batch, are evicted.
func (b *MemoryBuffer) Reject(batch []Metric) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.PushFront(batch)
}

// Len is the number of metrics held.
func (b *MemoryBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.Len()
}

// Cap is the buffer's capacity.
func (b *MemoryBuffer) Cap() int { return b.r.Cap() }
