package batch

import (
	"errors"
	"math"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/diskq"
	"github.com/morse-agent/morse/internal/throttle"
)

// diskFlight is a batch the disk buffer handed out: where its metrics came from, so that
// Accept can acknowledge them and Reject put them back.
type diskFlight struct {
	key         *morse.Metric // the batch's first element, to find the flight again
	n           int
	spans       []diskq.Span // read from the head
	lease       *diskq.Lease // popped from the tail
	spill       []spilled    // taken from memory
	undecodable int          // metrics of its records that could not be decoded
}

// Batch takes up to max metrics, the oldest first, or the newest first with NewestFirst, and
// appends them to dst in the order they arrived. Records it cannot decode are dropped and
// reported under morse.ReasonCorrupt (see dropUndecodable), and it reads on past them, so
// that it returns no empty batch while metrics are left.
func (b *DiskBuffer) Batch(dst []morse.Metric, max int) []morse.Metric {
	b.evictExcess()
	b.mu.Lock()
	start := len(dst)
	fl := &diskFlight{}
	if b.opts.NewestFirst {
		dst = b.takeNewest(dst, max, fl)
	} else {
		dst = b.readOldest(dst, max, fl)
		fl.spill = b.spill.popFront(nil, max-(len(dst)-start))
		dst = metricsOf(dst, fl.spill)
	}
	// A flight is found again by its first metric: one without metrics would never be
	// settled, so readOldest and takeNewest hand out no span or lease without one.
	if fl.n = len(dst) - start; fl.n > 0 {
		fl.key = &dst[start]
		b.flights = append(b.flights, fl)
		b.fb.inFlight += len(fl.spill)
	}
	b.mu.Unlock()
	b.reportCorrupt()
	return dst
}

// readOldest reads up to max metrics from the head of the disk queue. A span that decodes to
// no metric at all is acknowledged at once; one that decodes in part goes in the flight,
// whose Accept reports the rest.
func (b *DiskBuffer) readOldest(dst []morse.Metric, max int, fl *diskFlight) []morse.Metric {
	for got := 0; got < max; {
		n, bad := len(dst), fl.undecodable
		sp, err := b.q.Read(max-got, func(r diskq.Record) { dst = b.decode(dst, r, fl) })
		if err != nil {
			b.readFailed(err)
		}
		if sp.Items() == 0 {
			break
		}
		if len(dst) == n {
			b.dropUndecodable(b.q.Ack(sp), fl.undecodable-bad)
			fl.undecodable = bad
			continue
		}
		fl.spans = append(fl.spans, sp)
		got += len(dst) - n
	}
	return dst
}

// takeNewest takes the newest metrics: those kept in memory first, then the tail of the
// disk queue. A lease that decodes to no metric is acknowledged at once and the next one
// popped. A tail that cannot be popped (a disk too full even for the lease file, or a record
// that cannot be split) falls back to the oldest.
func (b *DiskBuffer) takeNewest(dst []morse.Metric, max int, fl *diskFlight) []morse.Metric {
	fl.spill = b.spill.popBack(nil, max)
	for rest := max - len(fl.spill); rest > 0 && fl.lease == nil; {
		l, recs, err := b.q.PopTail(rest)
		if l == nil {
			if err != nil && !errors.Is(err, diskq.ErrClosed) {
				if !errors.Is(err, diskq.ErrNoSpace) {
					b.readFailed(err)
				}
				dst = b.readOldest(dst, rest, fl)
			}
			break
		}
		if err != nil {
			b.readFailed(err)
		}
		n, bad := len(dst), fl.undecodable
		for _, r := range recs {
			dst = b.decode(dst, r, fl)
		}
		if len(dst) > n {
			fl.lease = l
			break
		}
		b.dropUndecodable(b.q.AckLease(l), fl.undecodable-bad)
		fl.undecodable = bad
	}
	return metricsOf(dst, fl.spill)
}

// dropUndecodable counts n metrics that could not be decoded, and were acknowledged with the
// result err, as corrupt; Batch reports them once it has released the lock.
func (b *DiskBuffer) dropUndecodable(err error, n int) {
	b.failed(err)
	b.corrupt.Add(int64(n))
}

func (b *DiskBuffer) decode(dst []morse.Metric, r diskq.Record, fl *diskFlight) []morse.Metric {
	n := len(dst)
	dst, err := decodeMetrics(dst, r.Payload, r.From, r.To)
	if err != nil {
		fl.undecodable += r.To - r.From - (len(dst) - n)
	}
	return dst
}

// readFailed logs a failure of the disk, throttled; the caller holds the lock.
func (b *DiskBuffer) readFailed(err error) {
	if ok, suppressed := b.warn.Allow(b.opts.Now()); ok {
		b.log.Error("disk buffer: read failed", "dir", b.opts.Dir, "error", err, throttle.SuppressedKey, suppressed)
	}
}

// takeFlights removes and returns the flights that batch is made of: found by its elements,
// or, for a batch that is not the slice Batch returned, the oldest flights it counts.
func (b *DiskBuffer) takeFlights(batch []morse.Metric) []*diskFlight {
	var out []*diskFlight
	for off := 0; off < len(batch); {
		i := b.flightAt(&batch[off])
		if i < 0 {
			break
		}
		out = append(out, b.flights[i])
		off += b.flights[i].n
		b.flights = append(b.flights[:i], b.flights[i+1:]...)
	}
	if len(out) > 0 || len(batch) == 0 {
		return out
	}
	for left := len(batch); left > 0 && len(b.flights) > 0 && b.flights[0].n <= left; {
		left -= b.flights[0].n
		out = append(out, b.flights[0])
		b.flights = b.flights[1:]
	}
	return out
}

func (b *DiskBuffer) flightAt(key *morse.Metric) int {
	for i, fl := range b.flights {
		if fl.key == key {
			return i
		}
	}
	return -1
}

// Accept acknowledges the batch: its metrics leave the disk for good.
func (b *DiskBuffer) Accept(batch []morse.Metric) {
	b.mu.Lock()
	var errs []error
	undecodable := 0
	for _, fl := range b.takeFlights(batch) {
		for _, sp := range fl.spans {
			errs = append(errs, b.q.Ack(sp))
		}
		if fl.lease != nil {
			errs = append(errs, b.q.AckLease(fl.lease))
		}
		undecodable += fl.undecodable
		b.fb.inFlight -= len(fl.spill)
	}
	if err := errors.Join(errs...); err != nil {
		b.readFailed(err)
	}
	b.publish()
	b.mu.Unlock()
	b.report(morse.ReasonCorrupt, nil, undecodable)
	b.notify()
}

// Reject puts the batch back where Batch takes from, and evicts the oldest metrics if the
// buffer is over its bounds.
func (b *DiskBuffer) Reject(batch []morse.Metric) {
	b.mu.Lock()
	fls := b.takeFlights(batch)
	for i := len(fls) - 1; i >= 0; i-- {
		fl := fls[i]
		b.fb.inFlight -= len(fl.spill)
		if b.opts.NewestFirst {
			b.spill.pushBack(fl.spill...)
		} else {
			b.spill.pushFront(fl.spill)
		}
		for j := len(fl.spans) - 1; j >= 0; j-- {
			b.q.Unread(fl.spans[j])
		}
		if fl.lease != nil {
			// On a full disk the queue keeps the lease and hands it out first again.
			_ = b.q.ReleaseLease(fl.lease)
		}
	}
	b.mu.Unlock()
	b.evictExcess()
}

// evictChunk bounds how many metrics one step of eviction takes, so that the metrics read
// back to report them (Eviction.Keep) stay few in memory at once.
const evictChunk = 10000

// evictExcess evicts the oldest metrics until the buffer is within its bounds, in steps,
// reporting each step after releasing the lock. Then it tells the Writer whether metrics
// are still held in memory (notify), for it runs after every Add, Batch and Reject.
func (b *DiskBuffer) evictExcess() {
	defer b.notify()
	for {
		b.mu.Lock()
		reason, ms, n, more := b.evictStep()
		b.publish()
		b.mu.Unlock()
		b.report(reason, ms, n)
		if !more || n == 0 {
			return
		}
	}
}

// evictStep evicts one chunk for the first bound that is exceeded: age, bytes, then count.
func (b *DiskBuffer) evictStep() (reason string, ms []morse.Metric, n int, more bool) {
	if b.closed {
		return "", nil, 0, false
	}
	var keep func(diskq.Record)
	if b.ev.Keep {
		keep = func(r diskq.Record) { ms, _ = decodeMetrics(ms, r.Payload, r.From, r.To) }
	}
	if b.opts.MaxAge > 0 {
		cutoff := b.opts.Now().Add(-b.opts.MaxAge).UnixNano()
		n, err := b.q.Drop(evictChunk, cutoff, keep)
		b.failed(err)
		for n < evictChunk && b.spill.len() > 0 && b.spill.at(0).at < cutoff {
			ms = metricsOf(ms, b.spill.popFront(nil, 1))
			n++
		}
		if n > 0 {
			return morse.ReasonTooOld, ms, n, true
		}
	}
	if b.opts.MaxBytes > 0 && b.q.PendingBytes() > b.opts.MaxBytes {
		n, err := b.q.DropBytes(b.opts.MaxBytes, keep)
		b.failed(err)
		if n > 0 {
			return morse.ReasonBufferBytes, ms, n, true
		}
	}
	over := b.lenLocked() - b.limit
	if over <= 0 {
		return "", nil, 0, false
	}
	step := min(over, evictChunk)
	n, err := b.q.Drop(step, math.MaxInt64, keep)
	b.failed(err)
	if n < step {
		taken := b.spill.popFront(nil, step-n)
		ms = metricsOf(ms, taken)
		n += len(taken)
	}
	return morse.ReasonBufferFull, ms, n, over > step
}

func (b *DiskBuffer) failed(err error) {
	if err != nil {
		b.readFailed(err)
	}
}
