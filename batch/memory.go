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
	r        *ring.Ring[morse.Metric, side]
	evict    Eviction
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time
	budget   *MemoryBudget // nil: none
	stamp    int64         // Unix ns of the last clock reading, which added metrics take
	held     int64         // bytes of the metrics in the ring
	flying   int64         // bytes of the batches in flight
	// inFlight keeps the times and sizes of the batches taken, by their backing array (the
	// Writer hands back to Accept and Reject the slices Batch filled), so that a rejected
	// batch comes back with the times it had and an accepted one gives its bytes back.
	inFlight map[*morse.Metric]taken
	spare    [][]side // side slices of settled batches, for the next ones
}

// side is what the ring keeps beside each metric, in an array of its own: when it was added
// and its size. The metric slots stay the size of a Metric, as they were before the buffer
// counted bytes, and the walks that read only sizes (a batch's bytes) read 16 bytes a
// metric, not 128.
type side struct {
	at   int64 // Unix ns
	size int64
}

// taken is a batch taken out of the ring and not yet settled.
type taken struct {
	sides []side
	size  int64
}

// maxSpare is how many side slices a buffer keeps for later batches: enough for the
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
	b := &MemoryBuffer{r: ring.New[morse.Metric, side](limit), evict: evict, maxBytes: bounds.MaxBytes,
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
	size := metricSize(&m) // before the lock, which it does not need
	b.mu.Lock()
	b.readClock()
	full := b.r.Len() == b.r.Cap()
	var gone int64 // the bytes of the oldest metric, which a full ring evicts
	if full {
		gone = b.r.Side(0).size
	}
	if b.maxAge > 0 || (full && b.evict.keep()) || b.overBytes(size-gone) {
		return b.addEvicting(&m, size) // and unlocks
	}
	// The common cases, kept as cheap as the buffer was when it knew no bytes: room in the
	// ring, or a full ring that overwrites its oldest metric with no one to hand it to,
	// within the byte bound and with no age bound to check.
	p, s := b.r.Slot()
	*p, *s = m, side{at: b.stamp, size: size}
	b.held += size - gone
	n := b.r.Len()
	b.mu.Unlock()
	if b.budget != nil && b.budget.add(size-gone) {
		b.budget.reclaim()
	}
	if full && b.evict.Report != nil {
		b.evict.Report(morse.ReasonBufferFull, 1, nil)
	}
	return n
}

// addEvicting is Add when it evicts, or may: the ring is full, or a bound is met. The
// caller holds the lock, which addEvicting releases.
func (b *MemoryBuffer) addEvicting(m *morse.Metric, size int64) int {
	var ev evicted
	b.push(&ev, m, size)
	freed := b.enforce(&ev, b.stamp)
	n := b.r.Len()
	b.mu.Unlock()
	b.settle(&ev, size-freed)
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
	if b.maxAge > 0 || b.overBytes(0) {
		freed = b.enforce(&ev, b.stamp)
	}
	n := b.r.Len()
	b.mu.Unlock()
	b.settle(&ev, added-freed)
	return n
}

// overBytes reports whether the bytes held and in flight, with more, are past MaxBytes.
func (b *MemoryBuffer) overBytes(more int64) bool {
	return b.maxBytes > 0 && b.held+b.flying+more > b.maxBytes
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
	p, s := b.r.Slot()
	if full { // p and s are the oldest's
		b.held -= s.size
		ev.add(reasonFull, p, b.evict.keep(), s.size)
	}
	*p, *s = *m, side{at: b.stamp, size: size}
	b.held += size
}

// enforce evicts the oldest metrics past the byte and age bounds and returns their bytes.
func (b *MemoryBuffer) enforce(ev *evicted, now int64) (freed int64) {
	for b.maxBytes > 0 && b.held+b.flying > b.maxBytes && b.r.Len() > 0 {
		freed += b.popOldest(ev, reasonBytes)
	}
	for b.maxAge > 0 && b.r.Len() > 0 && now-b.r.Side(0).at > int64(b.maxAge) {
		freed += b.popOldest(ev, reasonTooOld)
	}
	return freed
}

func (b *MemoryBuffer) popOldest(ev *evicted, reason int) int64 {
	var m [1]morse.Metric
	var s [1]side
	b.r.PopFront(m[:0], s[:0], 1)
	b.held -= s[0].size
	ev.add(reason, &m[0], b.evict.keep(), s[0].size)
	return s[0].size
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
	var sides []side
	if n := len(b.spare); n > 0 {
		sides, b.spare = b.spare[n-1], b.spare[:n-1]
	}
	start := len(dst)
	dst, sides = b.r.PopFront(dst, sides, b.batchLen(max))
	var size int64
	for i := range sides {
		size += sides[i].size
	}
	if len(sides) > 0 {
		b.held -= size
		b.flying += size
		b.inFlight[&dst[start]] = taken{sides: sides, size: size}
	} else {
		b.putSpare(sides)
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
		if room -= b.r.Side(i).size; room < 0 && i > 0 {
			return i
		}
	}
	return n
}

// putSpare keeps an emptied side slice for a later batch. The caller holds the lock.
func (b *MemoryBuffer) putSpare(sides []side) {
	if len(b.spare) < maxSpare && sides != nil {
		b.spare = append(b.spare, sides[:0])
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
		b.putSpare(f.sides)
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
	if ok {
		delete(b.inFlight, &batch[0])
		b.flying -= f.size
	}
	sides := f.sides
	if !ok || len(sides) != len(batch) {
		// Not a batch this buffer handed out, as it handed it out: it waits as of now, and
		// its bytes are counted again.
		if ok {
			b.putSpare(sides)
			delta = -f.size
		}
		sides = b.sidesNow(batch)
		for i := range sides {
			delta += sides[i].size
		}
	}
	keep, keepSides := batch, sides
	if over := len(keep) - (b.r.Cap() - b.r.Len()); over > 0 {
		for i := range keep[:over] {
			ev.add(reasonFull, &keep[i], b.evict.keep(), sides[i].size)
		}
		keep, keepSides = keep[over:], keepSides[over:]
	}
	b.r.PushFront(keep, keepSides)
	for i := range keepSides {
		b.held += keepSides[i].size
	}
	b.putSpare(sides)
	freed := b.enforce(&ev, b.now().UnixNano())
	b.mu.Unlock()
	b.settle(&ev, delta-freed)
}

// sidesNow sizes the metrics of ms and stamps them with the time now.
func (b *MemoryBuffer) sidesNow(ms []morse.Metric) []side {
	now := b.now().UnixNano()
	sides := make([]side, len(ms))
	for i := range ms {
		sides[i] = side{at: now, size: metricSize(&ms[i])}
	}
	return sides
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
		oldest = b.r.Side(0).at
	}
	for _, f := range b.inFlight {
		oldest = min(oldest, f.sides[0].at)
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
