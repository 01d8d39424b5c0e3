package batch

import (
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
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
// their oldest metric has waited: MemoryBuffer and DiskBuffer. The writer publishes them in
// its self-metrics, buffer_bytes and buffer_oldest_age_ns of internal_write.
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
