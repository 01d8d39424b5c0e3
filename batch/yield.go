package batch

import (
	"time"

	"github.com/morse-agent/morse/internal/busy"
)

// yielder lets the goroutine that adds metrics give up the processor now and then while the
// output is writing a backlog of more than two batches. A listener flooded flat out always
// has data to parse, and on a busy core it would take the CPU the output needs to send what
// it accepted, and then evict it. It never waits for room in the buffer. An output that is
// down (backing off) is not writing, and one whose writes have hung for writingFor is
// waiting on its sink, not short of CPU: their listeners do not yield at all.
type yielder struct {
	batchSize int
	yield     func() // replaced in tests
	// writing is the flusher's: since when the round of writes in flight began; none
	// between rounds and while the writer backs off.
	writing *busy.Since
}

// yieldEvery is how many added metrics apart a writer that is behind yields the processor.
const yieldEvery = 128

// writingFor is how long a round of writes may be in flight before its output is taken to
// be waiting on its sink rather than on the CPU.
const writingFor = 100 * time.Millisecond

func newYielder(batchSize int, writing *busy.Since) *yielder {
	return &yielder{batchSize: batchSize, yield: yieldProcessor, writing: writing}
}

// yieldProcessor parks the caller for a microsecond. runtime.Gosched would not do: when
// every P is busy parsing, a P polls the network only when it has nothing else to run, and
// Gosched hands the yielding goroutine straight back to it, so an output waiting for its
// sink's answers would wait for the runtime's monitor, about every 10 ms. Parking lets the
// P look for work, network completions included.
func yieldProcessor() { time.Sleep(time.Microsecond) }

// afterAdd is told of n metrics added, after which the buffer holds size and total metrics
// have been added in all.
func (y *yielder) afterAdd(total int64, n, size int) {
	if size < 2*y.batchSize {
		return
	}
	// Yield once for each multiple of yieldEvery the running total passed, so that a batch
	// of a thousand gives up the processor as often as a thousand metrics one by one.
	k := total/yieldEvery - (total-int64(n))/yieldEvery
	if k == 0 {
		return
	}
	if d, busy := y.writing.For(time.Now()); busy && d < writingFor {
		for range k {
			y.yield()
		}
	}
}
