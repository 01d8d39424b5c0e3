package batch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/ring"
)

// Buffer holds an output's metrics between the inputs and the flush loop. It is the one seam
// the Writer stores through, so that another implementation, such as a disk buffer, plugs in
// without the Writer knowing. Implementations must be safe for concurrent use: inputs add
// while the flush loop takes batches.
//
// A batch taken with Batch is in flight until it is either accepted (written or dropped for
// good) or rejected (the write failed and will be retried). A rejected batch goes back to the
// head in its original order. Whatever a buffer evicts to stay within its bounds, on Add or
// on Reject, it reports to the Eviction it was built with, never silently.
type Buffer interface {
	// Add appends one metric and returns how many the buffer then holds.
	Add(m morse.Metric) (size int)
	// AddBatch appends metrics in order and returns how many the buffer then holds. It keeps
	// no reference to ms.
	AddBatch(ms []morse.Metric) (size int)
	// Batch takes up to max of the oldest metrics, appending them to dst.
	Batch(dst []morse.Metric, max int) []morse.Metric
	// Accept ends the flight of batch for good.
	Accept(batch []morse.Metric)
	// Reject returns batch to the head, evicting the oldest metrics if the buffer filled up
	// while the batch was in flight.
	Reject(batch []morse.Metric)
	// Len is the number of metrics held, not counting a batch in flight.
	Len() int
	// Cap is the most metrics the buffer holds.
	Cap() int
}

// BufferGauges is implemented by buffers that know how many bytes they hold and how long
// their oldest metric has waited, such as DiskBuffer. The writer publishes them in its
// self-metrics, buffer_bytes and buffer_oldest_age_ns of internal_write.
type BufferGauges interface {
	Bytes() int64
	OldestAge() time.Duration
}

// EvictFunc receives what a buffer evicted: the reason (morse.ReasonBufferFull for a full
// memory buffer), how many, and, when the buffer was asked to keep them, the metrics
// themselves, oldest first. A buffer calls it from the goroutine whose call evicted them,
// after releasing its lock, so it may take its time without holding up other callers; the
// slice is the receiver's.
type EvictFunc func(reason string, n int, ms []morse.Metric)

// Eviction says what a buffer does with the metrics it evicts.
type Eviction struct {
	// Report receives every eviction; nil ignores them.
	Report EvictFunc
	// Keep hands Report the evicted metrics, not only their count. It costs a copy per
	// eviction, so a Writer asks for it only when someone reads them (Options.OnDrop).
	Keep bool
	// KeepTracked, when set, turns Keep on once it holds true: a Writer sets it when it
	// first buffers a tracked metric, whose group must learn of its eviction.
	KeepTracked *atomic.Bool
}

// keep reports whether the evicted metrics must be handed to Report.
func (e Eviction) keep() bool {
	return e.Keep || (e.KeepTracked != nil && e.KeepTracked.Load())
}

func (e Eviction) report(n int, ms []morse.Metric) {
	if n > 0 && e.Report != nil {
		e.Report(morse.ReasonBufferFull, n, ms)
	}
}

// MemoryBuffer is the default Buffer: a ring in memory that evicts the oldest metric when
// full.
type MemoryBuffer struct {
	mu    sync.Mutex
	r     *ring.Ring[morse.Metric]
	evict Eviction
}

// NewMemoryBuffer returns a buffer that holds up to limit metrics.
func NewMemoryBuffer(limit int, evict Eviction) *MemoryBuffer {
	return &MemoryBuffer{r: ring.New[morse.Metric](limit), evict: evict}
}

// Add appends one metric, evicting the oldest when full.
func (b *MemoryBuffer) Add(m morse.Metric) int {
	b.mu.Lock()
	var old morse.Metric
	full := b.r.Len() == b.r.Cap()
	keep := full && b.evict.keep()
	if keep {
		old = b.r.Peek(0)
	}
	b.r.Push(m)
	n := b.r.Len()
	b.mu.Unlock()
	if full {
		if keep {
			b.evict.report(1, []morse.Metric{old})
		} else {
			b.evict.report(1, nil)
		}
	}
	return n
}

// AddBatch appends metrics, evicting the oldest when full.
func (b *MemoryBuffer) AddBatch(ms []morse.Metric) int {
	var kept []morse.Metric
	b.mu.Lock()
	evicted := max(0, b.r.Len()+len(ms)-b.r.Cap())
	if evicted > 0 && b.evict.keep() {
		kept = b.evicted(ms, evicted)
	}
	b.r.PushAll(ms)
	n := b.r.Len()
	b.mu.Unlock()
	b.evict.report(evicted, kept)
	return n
}

// evicted copies the n oldest metrics of the ring followed by ms: the ones that pushing ms
// will evict.
func (b *MemoryBuffer) evicted(ms []morse.Metric, n int) []morse.Metric {
	out := make([]morse.Metric, 0, n)
	for i := 0; i < b.r.Len() && len(out) < n; i++ {
		out = append(out, b.r.Peek(i))
	}
	return append(out, ms[:n-len(out)]...)
}

// Batch takes up to max of the oldest metrics out of the ring. While they are in flight the
// ring has room for new metrics, so inputs are not slowed by a slow write.
func (b *MemoryBuffer) Batch(dst []morse.Metric, max int) []morse.Metric {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.PopFront(dst, max)
}

// Accept does nothing: Batch already removed the metrics.
func (b *MemoryBuffer) Accept([]morse.Metric) {}

// Reject puts the batch back in front; if the ring filled up meanwhile, the oldest metrics,
// which are the first of the batch, are evicted.
func (b *MemoryBuffer) Reject(batch []morse.Metric) {
	b.mu.Lock()
	evicted := b.r.PushFront(batch)
	b.mu.Unlock()
	var kept []morse.Metric
	if evicted > 0 && b.evict.keep() {
		kept = append(kept, batch[:evicted]...)
	}
	b.evict.report(evicted, kept)
}

// Len is the number of metrics held.
func (b *MemoryBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.Len()
}

// Cap is the buffer's capacity.
func (b *MemoryBuffer) Cap() int { return b.r.Cap() }
