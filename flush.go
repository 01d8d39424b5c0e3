package morse

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"
)

// run is the flush goroutine. It waits FlushInterval ± FlushJitter, or less when a full batch
// is waiting, then writes batches until the buffer is empty or a write fails. A failed write
// is retried after a backoff, for as long as it takes; during the backoff a full buffer does
// not cut the wait short, so a sink that is down sees requests at the backoff's pace.
func (w *BatchWriter) run() {
	defer close(w.done)
	ctx := w.runCtx
	if err := w.connect(ctx); err != nil {
		w.logRetry(err)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if !w.waitFlush(timer) {
			w.drain(ctx)
			return
		}
		for {
			delay, failed := w.flushOnce(ctx)
			if !failed {
				w.backoff.Reset()
				break
			}
			if !w.sleep(timer, delay) {
				w.drain(ctx)
				return
			}
		}
	}
}

// nextWait draws the wait before the next flush uniformly from
// [FlushInterval − FlushJitter, FlushInterval + FlushJitter], afresh every time, so that a
// fleet of agents started together does not flush in step.
func (w *BatchWriter) nextWait() time.Duration {
	j := w.opts.FlushJitter
	if j <= 0 {
		return w.opts.FlushInterval
	}
	return w.opts.FlushInterval - j + time.Duration(w.jitter(int64(2*j)+1))
}

// waitFlush waits for the next flush. A full-batch signal ends the wait early, unless the
// buffer has meanwhile been emptied by the previous flush. It returns false when the writer
// is closing.
func (w *BatchWriter) waitFlush(timer *time.Timer) bool {
	resetTimer(timer, w.nextWait())
	for {
		select {
		case <-w.stopping:
			return false
		case <-timer.C:
			return true
		case <-w.ready:
			if w.buf.Len() >= w.opts.BatchSize {
				return true
			}
		}
	}
}

// sleep waits d, or until the writer is closing (false).
func (w *BatchWriter) sleep(timer *time.Timer, d time.Duration) bool {
	resetTimer(timer, d)
	select {
	case <-w.stopping:
		return false
	case <-timer.C:
		return true
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	// Since Go 1.23 Reset on an unfired or fired timer is safe without draining.
	t.Reset(d)
}

// drain is the final flush at Close: it writes until the buffer is empty, backing off between
// failures, until ctx is cancelled by Close's deadline.
func (w *BatchWriter) drain(ctx context.Context) {
	for ctx.Err() == nil {
		delay, failed := w.flushOnce(ctx)
		if !failed {
			if w.buf.Len() == 0 {
				return
			}
			continue // a Write that raced with Close added more
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (w *BatchWriter) connect(ctx context.Context) error {
	if w.connected {
		return nil
	}
	if err := w.out.Connect(ctx); err != nil {
		return err
	}
	w.connected = true
	return nil
}

// flushOnce writes batches until what the buffer held at the start is written (failed is
// false) or a write must be retried (failed is true, and delay is how long to wait first).
// Metrics that arrive during the flush wait for the next one: under a steady flood an
// unbounded flush would never end, and the full-batch signal starts the next flush at once
// anyway. While a backlog remains, up to MaxInFlight batches are written at once.
func (w *BatchWriter) flushOnce(ctx context.Context) (delay time.Duration, failed bool) {
	w.reportEvictions()
	if err := w.connect(ctx); err != nil {
		w.stats.writeErrors.Incr()
		w.logRetry(err)
		return w.retryDelay(err), true
	}
	for todo := w.buf.Len(); todo > 0; {
		if ctx.Err() != nil {
			return 0, true
		}
		n := w.takeFlights(&todo)
		if n == 0 {
			return 0, false
		}
		w.writingSince.Store(time.Now().UnixNano())
		w.writeFlights(ctx, w.flights[:n])
		w.writingSince.Store(0)
		if err := w.settleFlights(w.flights[:n]); err != nil {
			return w.retryDelay(err), true
		}
		w.stats.bufferSize.Set(int64(w.buf.Len()))
	}
	return 0, false
}

// flight is one batch being written and the result of its write.
type flight struct {
	batch []Metric
	err   error
}

// takeFlights takes up to MaxInFlight batches of what is left to do out of the buffer.
func (w *BatchWriter) takeFlights(todo *int) int {
	n := 0
	for n < len(w.flights) && *todo > 0 {
		f := &w.flights[n]
		f.batch = w.buf.Batch(f.batch[:0], min(*todo, w.opts.BatchSize))
		if len(f.batch) == 0 {
			break
		}
		*todo -= len(f.batch)
		n++
	}
	return n
}

// writeFlights writes the batches, concurrently when there are several, and returns when
// every write has.
func (w *BatchWriter) writeFlights(ctx context.Context, fs []flight) {
	write := func(f *flight) {
		start := time.Now()
		f.err = w.out.Write(ctx, f.batch)
		w.stats.writeTimeNs.Add(int64(time.Since(start)))
	}
	if len(fs) == 1 {
		write(&fs[0])
		return
	}
	var wg sync.WaitGroup
	for i := range fs {
		wg.Go(func() { write(&fs[i]) })
	}
	wg.Wait()
}

// settleFlights books the writes in the order their batches left the buffer and returns the
// first error to retry, if any. Batches to retry go back in reverse order, so that the oldest
// is at the head again and, if the buffer filled up meanwhile, eviction takes the oldest
// metrics of all.
func (w *BatchWriter) settleFlights(fs []flight) (retryErr error) {
	for i := range fs {
		if Classify(fs[i].err) == OutcomeRetry {
			retryErr = cmp.Or(retryErr, fs[i].err)
			continue
		}
		w.settle(fs[i].batch, fs[i].err)
	}
	for i := len(fs) - 1; i >= 0; i-- {
		if Classify(fs[i].err) == OutcomeRetry {
			w.stats.writeErrors.Incr()
			w.stats.drop(ReasonBufferFull, w.buf.Reject(fs[i].batch))
		}
	}
	if retryErr != nil {
		w.logRetry(retryErr)
	}
	return retryErr
}

// settle books a write that is final: stored, partly stored or dropped for good.
func (w *BatchWriter) settle(batch []Metric, err error) {
	n := len(batch)
	w.buf.Accept(batch)
	switch Classify(err) {
	case OutcomeWritten:
		w.stats.wrote(n)
	case OutcomePartial:
		var pw *PartialWriteError
		errors.As(err, &pw)
		written, dropped := pw.split(n)
		w.stats.writeErrors.Incr()
		w.stats.wrote(written)
		w.stats.drop(reasonOr(pw.Reason), dropped)
		w.dropped(batch, err, dropped)
	case OutcomeDropped:
		var pe *PermanentError
		errors.As(err, &pe)
		w.stats.writeErrors.Incr()
		w.stats.drop(reasonOr(pe.Reason), n)
		w.dropped(batch, err, n)
	}
}

func reasonOr(r string) string {
	if r == "" {
		return ReasonPermanent
	}
	return r
}

// retryDelay is the server's Retry-After when it gave one, else the next backoff step.
func (w *BatchWriter) retryDelay(err error) time.Duration {
	var re *RetryableError
	if errors.As(err, &re) && re.RetryAfter > 0 {
		w.backoff.Next() // a server that asks for patience still counts as a failure
		return re.RetryAfter
	}
	return w.backoff.Next()
}

func (w *BatchWriter) dropped(batch []Metric, err error, n int) {
	if ok, suppressed := w.dropLog.allow(time.Now()); ok {
		w.log.Error("write dropped for good", "metrics", n, "error", err, "similar_suppressed", suppressed)
	}
	if w.opts.OnDrop != nil {
		w.opts.OnDrop(batch, err)
	}
}

func (w *BatchWriter) logRetry(err error) {
	if ok, suppressed := w.retryLog.allow(time.Now()); ok {
		w.log.Warn("write failed, will retry", "error", err, "attempt", w.backoff.Attempts()+1,
			"buffered", w.buf.Len(), "similar_suppressed", suppressed)
	}
}

// reportEvictions logs how many metrics the full buffer evicted since the last report. It
// runs once per flush, never per metric, which throttles it to the flush pace.
func (w *BatchWriter) reportEvictions() {
	total := w.stats.bufferFull.Get()
	if n := total - w.lastEvicts; n > 0 {
		w.log.Warn("buffer full: oldest metrics dropped", "dropped_since_last_report", n,
			"buffer_limit", w.buf.Cap())
	}
	w.lastEvicts = total
}

// throttle lets one message through per interval and counts the ones it held back.
type throttle struct {
	every      time.Duration
	last       time.Time
	suppressed int
}

func (t *throttle) allow(now time.Time) (ok bool, suppressed int) {
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		return false, 0
	}
	t.last, suppressed, t.suppressed = now, t.suppressed, 0
	return true, suppressed
}
