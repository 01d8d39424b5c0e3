package batch

import (
	"sync"
	"sync/atomic"
)

// MemoryBudget bounds the bytes that several memory buffers hold together, such as every
// output's of an agent ([agent] buffer_memory_limit). Each buffer counts its bytes (see
// MetricSize) into it as it adds them, with one atomic add per call. Past the limit, the
// buffer that holds the most gives up its oldest metrics, reported under
// morse.ReasonBufferBytes, until the budget is met again.
//
// It takes from the largest buffer, not from the one being added to, so that an output whose
// sink is down, and whose buffer fills, does not make a healthy output drop what it would
// have written at its next flush. Batches in flight count, but only metrics held in a ring
// can be evicted.
type MemoryBudget struct {
	limit atomic.Int64
	used  atomic.Int64

	mu      sync.Mutex
	buffers map[*MemoryBuffer]struct{}
}

// NewMemoryBudget returns a budget of limit bytes, which must be positive.
func NewMemoryBudget(limit int64) *MemoryBudget {
	g := &MemoryBudget{buffers: map[*MemoryBuffer]struct{}{}}
	g.limit.Store(limit)
	return g
}

// Limit is the budget's bound in bytes.
func (g *MemoryBudget) Limit() int64 { return g.limit.Load() }

// SetLimit changes the bound, as a reload does. A lower one is met at the next add.
func (g *MemoryBudget) SetLimit(limit int64) { g.limit.Store(limit) }

// Used is the bytes its buffers hold and have in flight now.
func (g *MemoryBudget) Used() int64 { return g.used.Load() }

// add counts delta more bytes and reports whether the budget is now exceeded.
func (g *MemoryBudget) add(delta int64) bool {
	if delta == 0 {
		return g.used.Load() > g.limit.Load()
	}
	return g.used.Add(delta) > g.limit.Load()
}

func (g *MemoryBudget) join(b *MemoryBuffer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buffers[b] = struct{}{}
}

// leave forgets b and the bytes it held.
func (g *MemoryBudget) leave(b *MemoryBuffer, bytes int64) {
	g.mu.Lock()
	_, ok := g.buffers[b]
	delete(g.buffers, b)
	g.mu.Unlock()
	if ok {
		g.used.Add(-bytes)
	}
}

// reclaim evicts from the largest buffer until the budget is met, or no buffer holds
// anything it could evict. It holds no lock while a buffer evicts: a buffer calls it after
// releasing its own.
func (g *MemoryBudget) reclaim() {
	for g.used.Load() > g.limit.Load() {
		b := g.largest()
		if b == nil || !b.shed(g) {
			return
		}
	}
}

// largest is the buffer that holds the most bytes it could evict, or nil if none holds any.
func (g *MemoryBudget) largest() *MemoryBuffer {
	g.mu.Lock()
	defer g.mu.Unlock()
	var top *MemoryBuffer
	var most int64
	for b := range g.buffers {
		if n := b.heldBytes(); n > most {
			top, most = b, n
		}
	}
	return top
}
