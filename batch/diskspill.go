package batch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
)

// While the disk refuses writes (full, or a file-size limit), the disk buffer keeps what it
// could not write in memory: the spill. Those metrics would not survive a crash, so the
// buffer does not pretend they would. Tracked metrics among them stay tracked until they
// reach the disk (or the sink, or are evicted); the Writer holds back the inputs that can
// wait (its gate's hold), and counts them in buffer_memory_fallback; a warning says why,
// once for each time the disk starts refusing. The buffer retries the disk every
// RetryInterval by itself, so that space that returns resumes it although the inputs are
// held back and add nothing.

// fallback is the disk buffer's account of its spill. Its fields are guarded by the
// buffer's lock, but for held (published under it, read without) and the notification's own.
type fallback struct {
	inFlight int                // spilled metrics in batches in flight
	retry    *time.Timer        // the next retry of the disk, while metrics are held in memory
	warn     *throttle.Throttle // the warning that the disk refuses writes, if it flaps
	held     atomic.Int64       // spill plus inFlight, as last published

	notifyMu sync.Mutex
	told     bool             // what onHold was last told: whether metrics were held
	onHold   func(held int64) // told when metrics start or stop being held in memory
}

// MemoryFallback is how many metrics the buffer holds in memory, in the buffer or in a batch
// in flight, because the disk refused them: a crash of the process would lose them.
func (b *DiskBuffer) MemoryFallback() int { return int(b.fb.held.Load()) }

// setOnHold sets the function told, outside the buffer's lock, when metrics start or stop
// being held in memory, with how many; the Writer holds its inputs back meanwhile.
func (b *DiskBuffer) setOnHold(f func(held int64)) {
	b.fb.notifyMu.Lock()
	defer b.fb.notifyMu.Unlock()
	b.fb.onHold = f
}

// publish records how many metrics are held in memory; the caller holds the lock.
func (b *DiskBuffer) publish() { b.fb.held.Store(int64(b.spill.len() + b.fb.inFlight)) }

// notify tells onHold when the held metrics came or went since it was last told. It runs
// outside the buffer's lock, after each change was published; the notifications are in
// turn, so whichever runs last reads the last state.
func (b *DiskBuffer) notify() {
	b.fb.notifyMu.Lock()
	defer b.fb.notifyMu.Unlock()
	n := b.fb.held.Load()
	if (n > 0) != b.fb.told && b.fb.onHold != nil {
		b.fb.told = n > 0
		b.fb.onHold(n)
	}
}

// keep holds metrics in memory while the disk refuses them; the caller holds the lock.
func (b *DiskBuffer) keep(ms []morse.Metric, now time.Time) {
	at := now.UnixNano()
	for _, m := range ms {
		b.spill.pushBack(spilled{m: m, at: at})
	}
}

// diskFailed records a write the disk refused and arms the retry; the caller holds the lock.
// The warning is logged when the disk starts refusing, not on every retry.
func (b *DiskBuffer) diskFailed(err error, now time.Time) {
	if b.diskErr == nil {
		if ok, suppressed := b.fb.warn.Allow(now); ok {
			b.log.Warn("disk buffer: the disk refuses writes; metrics are held in memory, and inputs that can wait "+
				"are held back, until it takes them again", "dir", b.opts.Dir, "error", err,
				"retry_interval", b.opts.RetryInterval, throttle.SuppressedKey, suppressed)
		}
	}
	b.diskErr = err
	b.retryAt = now.Add(b.opts.RetryInterval)
	b.armRetry()
}

// diskWorks records a write the disk took, once nothing is left in memory to write.
func (b *DiskBuffer) diskWorks() {
	if b.diskErr != nil && b.spill.len() == 0 {
		b.log.Info("disk buffer: the disk takes writes again", "dir", b.opts.Dir)
		b.diskErr = nil
	}
}

// unspill writes what is kept in memory to disk, oldest first, as far as the disk takes it,
// and returns the tracked metrics it wrote, for the caller to settle once it has released
// the lock.
func (b *DiskBuffer) unspill(now time.Time) (done []morse.Metric) {
	var chunk []spilled
	var ms []morse.Metric
	for b.spill.len() > 0 {
		chunk = b.spill.popFront(chunk[:0], maxRecordMetrics)
		ms = metricsOf(ms[:0], chunk)
		if err := b.append(ms, chunk[0].at); err != nil {
			b.spill.pushFront(chunk)
			b.diskFailed(err, now)
			return done
		}
		for _, m := range ms {
			if m.Tracked() {
				done = append(done, m)
			}
		}
	}
	b.diskWorks()
	return done
}

// armRetry has retryDisk run in RetryInterval, unless the buffer is closed; the caller holds
// the lock.
func (b *DiskBuffer) armRetry() {
	switch {
	case b.closed:
	case b.fb.retry == nil:
		b.fb.retry = time.AfterFunc(b.opts.RetryInterval, b.retryDisk)
	default:
		b.fb.retry.Reset(b.opts.RetryInterval)
	}
}

// stopRetry stops the retries, at Close; the caller holds the lock.
func (b *DiskBuffer) stopRetry() {
	if b.fb.retry != nil {
		b.fb.retry.Stop()
	}
}

// retryDisk writes what is held in memory to disk once RetryInterval has passed since the
// disk last refused, and runs again while metrics are held in memory: inputs held back add
// nothing, so no Add would try.
func (b *DiskBuffer) retryDisk() {
	b.mu.Lock()
	var done []morse.Metric
	if !b.closed {
		if now := b.opts.Now(); b.spill.len() > 0 && !now.Before(b.retryAt) {
			done = b.unspill(now)
		}
		if b.spill.len()+b.fb.inFlight > 0 {
			b.armRetry()
		}
		b.publish()
	}
	b.mu.Unlock()
	morse.SettleTracked(done, true)
	b.notify()
}

// spilled is a metric the disk buffer keeps in memory because the disk refused it, with
// the time it arrived (for the age bound).
type spilled struct {
	m  morse.Metric
	at int64
}

// deque is a growable double-ended queue of spilled metrics, oldest first.
type deque struct {
	buf  []spilled
	head int
	n    int
}

func (d *deque) len() int { return d.n }

func (d *deque) at(i int) *spilled { return &d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) grow(n int) {
	if d.n+n <= len(d.buf) {
		return
	}
	buf := make([]spilled, max(2*len(d.buf), d.n+n, 64))
	for i := range d.n {
		buf[i] = *d.at(i)
	}
	d.buf, d.head = buf, 0
}

// pushBack appends vs as the newest.
func (d *deque) pushBack(vs ...spilled) {
	d.grow(len(vs))
	for _, v := range vs {
		d.n++
		*d.at(d.n - 1) = v
	}
}

// pushFront puts vs back in front, in their order.
func (d *deque) pushFront(vs []spilled) {
	d.grow(len(vs))
	for i := len(vs) - 1; i >= 0; i-- {
		d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
		d.n++
		*d.at(0) = vs[i]
	}
}

// popFront removes up to n of the oldest and appends them to dst, oldest first.
func (d *deque) popFront(dst []spilled, n int) []spilled {
	for ; n > 0 && d.n > 0; n-- {
		v := d.at(0)
		dst = append(dst, *v)
		*v = spilled{}
		d.head = (d.head + 1) % len(d.buf)
		d.n--
	}
	return dst
}

// popBack removes up to n of the newest and appends them to dst, oldest first.
func (d *deque) popBack(dst []spilled, n int) []spilled {
	n = min(n, d.n)
	start := len(dst)
	for i := d.n - n; i < d.n; i++ {
		dst = append(dst, *d.at(i))
		*d.at(i) = spilled{}
	}
	d.n -= n
	return dst[:start+n]
}

func metricsOf(dst []morse.Metric, vs []spilled) []morse.Metric {
	for _, v := range vs {
		dst = append(dst, v.m)
	}
	return dst
}
