package batch

import (
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/ring"
)

// MemoryBuffer is the default Buffer: a ring in memory. Past its count limit the oldest
// metric goes, reported under morse.ReasonBufferFull; past MemoryBounds.MaxBytes, under
// morse.ReasonBufferBytes; past MemoryBounds.MaxAge, under morse.ReasonTooOld; and past a
// MemoryBudget it shares with other buffers, the oldest of the buffer that holds the most go,
// under morse.ReasonBufferBytes too.
//
// Its bytes are MetricSize summed over the metrics held and the batches in flight: a batch
// in flight is still in memory, and a bound that left it out would let MaxInFlight batches
// of any size pass it.
//
// It knows its bytes and the age of its oldest metric (BufferGauges) without reading the
// clock for every metric, which costs four times an Add on the VMs morse was measured on: a
// metric takes the time of the buffer's last reading, which it makes when it goes from
// empty to not, takes a batch, or is asked for its age. The age it reports is therefore at
// most the time between two such readings (a flush interval, or a retry's backoff) more than
// the exact one. With MaxAge set the buffer reads the clock at every add, so that it never
// drops a metric for an age it has not reached.
type MemoryBuffer struct {
	mu       sync.Mutex
	r        *ring.Ring[entry]
	evict    Eviction
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time
	budget   *MemoryBudget // nil: none
	stamp    int64         // Unix ns of the last clock reading, which added metrics take
	held     int64         // bytes of the metrics in the ring
	flying   int64         // bytes of the batches in flight
	// inFlight keeps the entries of the batches taken, by their backing array (the Writer
	// hands back to Accept and Reject the slices Batch filled), so that a rejected batch
	// comes back with the times it had and an accepted one gives its bytes back.
	inFlight map[*morse.Metric]taken
	spare    [][]entry // entry slices of settled batches, for the next ones
}

// entry is one buffered metric, with when it was added and its size.
type entry struct {
	m    morse.Metric
	at   int64 // Unix ns
	size int64
}

// taken is a batch taken out of the ring and not yet settled.
type taken struct {
	entries []entry
	size    int64
}

// maxSpare is how many entry slices a buffer keeps for later batches: enough for the
// batches in flight of an ordinary output, without pinning 64 batches' worth for good.
const maxSpare = 8

// MemoryBounds are the bounds of a MemoryBuffer beyond the count; zero is no bound.
type MemoryBounds struct {
	MaxBytes int64
	MaxAge   time.Duration
	// Budget, when set, is shared with other buffers: see MemoryBudget.
	Budget *MemoryBudget
	Now    func() time.Time // the clock; time.Now if nil
}

// BoundedMemoryBuffer is the name MemoryBuffer had when only it knew bytes and ages.
type BoundedMemoryBuffer = MemoryBuffer

// NewMemoryBuffer returns a buffer of up to limit metrics, with no bound on their bytes. A
// Writer bounds its buffer by Options.BufferMaxBytes, DefaultBufferMaxBytes unless set.
func NewMemoryBuffer(limit int, evict Eviction) *MemoryBuffer {
	return NewBoundedMemoryBuffer(limit, evict, MemoryBounds{})
}

// NewBoundedMemoryBuffer returns a memory buffer of up to limit metrics within bounds.
func NewBoundedMemoryBuffer(limit int, evict Eviction, bounds MemoryBounds) *MemoryBuffer {
	b := &MemoryBuffer{r: ring.New[entry](limit), evict: evict, maxBytes: bounds.MaxBytes,
		maxAge: bounds.MaxAge, now: bounds.Now, budget: bounds.Budget, inFlight: map[*morse.Metric]taken{}}
	if b.now == nil {
		b.now = time.Now
	}
	if b.budget != nil {
		b.budget.join(b)
	}
	return b
}

// Add appends one metric, evicting the oldest past any bound.
func (b *MemoryBuffer) Add(m morse.Metric) int {
	var ev evicted
	b.mu.Lock()
	b.readClock()
	size := metricSize(&m)
	b.push(&ev, &m, size)
	var freed int64
	if b.bounded() {
		freed = b.enforce(&ev, b.stamp)
	}
	n := b.r.Len()
	b.mu.Unlock()
	if b.budget != nil || ev.n > 0 {
		b.settle(&ev, size-freed)
	}
	return n
}

// AddBatch appends metrics in order, evicting the oldest past any bound.
func (b *MemoryBuffer) AddBatch(ms []morse.Metric) int {
	var ev evicted
	var added, freed int64
	b.mu.Lock()
	b.readClock()
	for i := range ms {
		size := metricSize(&ms[i])
		added += size
		b.push(&ev, &ms[i], size)
	}
	if b.bounded() {
		freed = b.enforce(&ev, b.stamp)
	}
	n := b.r.Len()
	b.mu.Unlock()
	b.settle(&ev, added-freed)
	return n
}

// bounded reports whether enforce may have something to evict: the bytes are past MaxBytes,
// or MaxAge is set.
func (b *MemoryBuffer) bounded() bool {
	return (b.maxBytes > 0 && b.held+b.flying > b.maxBytes) || b.maxAge > 0
}

// readClock stamps what is added next: at every add when MaxAge is set, and otherwise only
// when the ring is empty, so that a metric never takes the time of a reading from before
// the buffer sat empty.
func (b *MemoryBuffer) readClock() {
	if b.maxAge > 0 || b.r.Len() == 0 {
		b.stamp = b.now().UnixNano()
	}
}

// push appends m, stamped with the buffer's time, evicting the oldest when the ring is
// full. What it evicts leaves the budget in the caller's settle: push does not count it as
// freed.
func (b *MemoryBuffer) push(ev *evicted, m *morse.Metric, size int64) {
	full := b.r.Len() == b.r.Cap()
	e := b.r.Slot()
	if full { // e is the oldest
		b.held -= e.size
		ev.add(reasonFull, &e.m, b.evict.keep(), e.size)
	}
	e.m, e.at, e.size = *m, b.stamp, size
	b.held += size
}

// enforce evicts the oldest metrics past the byte and age bounds and returns their bytes.
func (b *MemoryBuffer) enforce(ev *evicted, now int64) (freed int64) {
	for b.maxBytes > 0 && b.held+b.flying > b.maxBytes && b.r.Len() > 0 {
		freed += b.popOldest(ev, reasonBytes)
	}
	for b.maxAge > 0 && b.r.Len() > 0 && now-b.r.Peek(0).at > int64(b.maxAge) {
		freed += b.popOldest(ev, reasonTooOld)
	}
	return freed
}

func (b *MemoryBuffer) popOldest(ev *evicted, reason int) int64 {
	var one [1]entry
	e := b.r.PopFront(one[:0], 1)[0]
	b.held -= e.size
	ev.add(reason, &e.m, b.evict.keep(), e.size)
	return e.size
}

// settle, called without the lock, tells the budget of delta more bytes (less those the
// ring evicted when full), lets it reclaim what passes it, and reports the evictions.
func (b *MemoryBuffer) settle(ev *evicted, delta int64) {
	if b.budget != nil {
		if b.budget.add(delta - ev.sizes[reasonFull]) {
			b.budget.reclaim()
		}
	}
	ev.report(b.evict)
}

// Batch takes up to max of the oldest metrics, first evicting those past MaxAge. While they
// are in flight the ring has room for new metrics, so inputs are not slowed by a slow write;
// their bytes stay counted until Accept or Reject.
func (b *MemoryBuffer) Batch(dst []morse.Metric, max int) []morse.Metric {
	var ev evicted
	b.mu.Lock()
	b.stamp = b.now().UnixNano()
	freed := b.enforce(&ev, b.stamp)
	var entries []entry
	if n := len(b.spare); n > 0 {
		entries, b.spare = b.spare[n-1], b.spare[:n-1]
	}
	entries = b.r.PopFront(entries, b.batchLen(max))
	start := len(dst)
	var size int64
	for i := range entries {
		dst = append(dst, entries[i].m)
		size += entries[i].size
	}
	if len(entries) > 0 {
		b.held -= size
		b.flying += size
		b.inFlight[&dst[start]] = taken{entries: entries, size: size}
	} else {
		b.putSpare(entries)
	}
	b.mu.Unlock()
	b.settle(&ev, -freed)
	return dst
}

// flyingDivisor sets the most bytes the batches in flight take together: MaxBytes over
// flyingDivisor, 4 MiB at the default bound. A batch of a thousand 1 MiB lines would
// otherwise become a request body of 1 GB, built again beside the buffer at every retry,
// and an output that writes several batches at once builds a body for each; batches of
// ordinary metrics are far smaller and never meet it.
const flyingDivisor = 16

// batchLen is how many of the oldest metrics, up to max, the next batch takes: as many as
// keep the batches in flight within MaxBytes/flyingDivisor, but at least one, so that a
// metric larger than that is still written and a caller that takes batches until the
// buffer is empty gets there. The caller holds the lock.
func (b *MemoryBuffer) batchLen(max int) int {
	if b.maxBytes <= 0 {
		return max
	}
	room, n := b.maxBytes/flyingDivisor-b.flying, min(max, b.r.Len())
	for i := range n {
		if room -= b.r.At(i).size; room < 0 && i > 0 {
			return i
		}
	}
	return n
}

// putSpare keeps an emptied entry slice for a later batch. The caller holds the lock.
func (b *MemoryBuffer) putSpare(entries []entry) {
	if len(b.spare) < maxSpare {
		clear(entries) // the metrics are the writer's now, not the buffer's to keep alive
		b.spare = append(b.spare, entries[:0])
	}
}

// Accept ends the flight of a batch written or dropped for good, and frees its bytes.
func (b *MemoryBuffer) Accept(batch []morse.Metric) {
	if len(batch) == 0 {
		return
	}
	b.mu.Lock()
	f, ok := b.inFlight[&batch[0]]
	if ok {
		delete(b.inFlight, &batch[0])
		b.flying -= f.size
		b.putSpare(f.entries)
	}
	b.mu.Unlock()
	if ok && b.budget != nil {
		b.budget.add(-f.size)
	}
}

// Reject puts the batch back in front with the times it had, then enforces the bounds; if
// the ring filled up meanwhile, the oldest metrics, which are the first of the batch, go.
func (b *MemoryBuffer) Reject(batch []morse.Metric) {
	if len(batch) == 0 {
		return
	}
	var ev evicted
	var delta int64
	b.mu.Lock()
	f, ok := b.inFlight[&batch[0]]
	entries := f.entries
	if ok {
		delete(b.inFlight, &batch[0])
		b.flying -= f.size
	} else { // not a batch this buffer handed out: it waits as of now, and adds its bytes
		now := b.now().UnixNano()
		entries = make([]entry, 0, len(batch))
		for _, m := range batch {
			e := entry{m: m, at: now, size: MetricSize(m)}
			entries, delta = append(entries, e), delta+e.size
		}
	}
	keep := entries
	if over := len(keep) - (b.r.Cap() - b.r.Len()); over > 0 {
		for _, e := range keep[:over] {
			ev.add(reasonFull, &e.m, b.evict.keep(), e.size)
		}
		keep = keep[over:]
	}
	b.r.PushFront(keep)
	for _, e := range keep {
		b.held += e.size
	}
	if ok {
		b.putSpare(entries)
	}
	freed := b.enforce(&ev, b.now().UnixNano())
	b.mu.Unlock()
	b.settle(&ev, delta-freed)
}

// Len is the number of metrics held, not counting the batches in flight.
func (b *MemoryBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.r.Len()
}

// Cap is the most metrics the buffer holds.
func (b *MemoryBuffer) Cap() int { return b.r.Cap() }

// Bytes is the approximate memory of the metrics held and in flight (BufferGauges).
func (b *MemoryBuffer) Bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held + b.flying
}

// OldestAge is how long the oldest metric held or in flight has waited (BufferGauges).
func (b *MemoryBuffer) OldestAge() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stamp = b.now().UnixNano()
	oldest := b.stamp
	if b.r.Len() > 0 {
		oldest = b.r.Peek(0).at
	}
	for _, f := range b.inFlight {
		oldest = min(oldest, f.entries[0].at)
	}
	return time.Duration(b.stamp - oldest)
}

// heldBytes is what the budget may take back from this buffer: the bytes of the metrics
// held, not those in flight.
func (b *MemoryBuffer) heldBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// shed evicts the oldest metrics, under morse.ReasonBufferBytes, until the budget is met or
// the ring is empty, and reports whether it evicted any. The budget calls it without a lock.
func (b *MemoryBuffer) shed(g *MemoryBudget) bool {
	var ev evicted
	b.mu.Lock()
	n := 0
	for ; g.used.Load() > g.limit.Load() && b.r.Len() > 0; n++ {
		g.used.Add(-b.popOldest(&ev, reasonBytes))
	}
	b.mu.Unlock()
	ev.report(b.evict)
	return n > 0
}

// leaveBudget gives the buffer's bytes back to its budget and leaves it, for a writer that
// closed: whatever it still holds or has in flight is no longer the agent's to account for.
func (b *MemoryBuffer) leaveBudget() {
	if b.budget == nil {
		return
	}
	b.mu.Lock()
	bytes := b.held + b.flying
	b.mu.Unlock()
	b.budget.leave(b, bytes)
}

// The reasons a memory buffer evicts for, as indexes of evicted's arrays.
const (
	reasonFull = iota
	reasonBytes
	reasonTooOld
	numReasons
)

var reasonNames = [numReasons]string{morse.ReasonBufferFull, morse.ReasonBufferBytes, morse.ReasonTooOld}

// evicted gathers what one call evicted, by reason, to report after the lock. It allocates
// only to keep metrics, so that a full ring evicting one metric per Add costs no garbage.
type evicted struct {
	n       int // of all reasons
	counts  [numReasons]int
	sizes   [numReasons]int64
	metrics [numReasons][]morse.Metric
}

func (e *evicted) add(reason int, m *morse.Metric, keep bool, size int64) {
	e.n++
	e.counts[reason]++
	e.sizes[reason] += size
	if keep {
		e.metrics[reason] = append(e.metrics[reason], *m)
	}
}

func (e *evicted) report(ev Eviction) {
	if e.n == 0 || ev.Report == nil {
		return
	}
	for r, n := range e.counts {
		if n > 0 {
			ev.Report(reasonNames[r], n, e.metrics[r])
		}
	}
}
