package agent

import (
	"sync"

	"github.com/morse-agent/morse"
)

// batchScratch holds the slices addFiltered builds, so that a listener's steady stream of
// batches reuses them. The same batch reaches every output, so each output filters it into
// a slice of its own rather than in place.
var batchScratch = sync.Pool{New: func() any { return new([]morse.Metric) }}

// maxPooledBatch bounds the slices kept in batchScratch, so that one huge batch does not
// pin its memory for good.
const maxPooledBatch = 1 << 16

// addFiltered buffers what this output's filter passes of ms, expanded when the output
// needs it, in one write, as add would each of them. Metrics rejected are counted once for
// the batch. A disk buffer writes a record per write: metric by metric, a 1000-line body
// cost 1000 write(2) calls. It reports how many it buffered.
func (ro *runningOutput) addFiltered(ms []morse.Metric) int {
	sp := batchScratch.Get().(*[]morse.Metric)
	kept := (*sp)[:0]
	expand := !ro.writesLines()
	for _, m := range ms {
		if ro.cfg.Filter != nil {
			var ok bool
			if m, ok = ro.cfg.Filter.Apply(m); !ok {
				continue
			}
		}
		if _, line := m.Line(); line && expand {
			m = m.Expanded()
		}
		kept = append(kept, ro.rename(m))
	}
	if n := len(ms) - len(kept); n > 0 {
		ro.w.CountFiltered(n)
	}
	if len(kept) > 0 {
		_ = ro.w.WriteBatch(kept) // ErrClosed during a reload's hand-over is already counted
	}
	n := len(kept)
	clear(kept) // pin no metric's memory in the pool
	if cap(kept) <= maxPooledBatch {
		*sp = kept[:0]
		batchScratch.Put(sp)
	}
	return n
}
