package batch

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/backoff"
	"github.com/morse-agent/morse/internal/busy"
	"github.com/morse-agent/morse/internal/flowgate"
	"github.com/morse-agent/morse/internal/throttle"
)

// flusher takes batches out of the buffer and sends them down the sender chain, up to
// maxInFlight at once, then books each result: written, dropped for good, or back to the
// buffer for a retry.
type flusher struct {
	buf       Buffer
	send      sender
	batchSize int
	flights   []flight // one per batch that may be in flight
	drops     *dropper
	stats     *outputStats
	gate      *flowgate.Gate  // told of the buffer's size and of the sink's health
	writing   busy.Since      // a round of writes in flight
	logRetry  func(err error) // logs a failure that will be retried, throttled
	log       *slog.Logger

	// mu orders the end of a round of writes against Close giving up on it (abandon), so
	// that each batch is booked once: by settle, or by Close as lost at shutdown.
	mu        sync.Mutex
	inRound   bool // a round of writes is in flight
	abandoned bool // Close gave up on the flush loop: no round starts or settles any more

	// keepsFlights is set for a persistent buffer, which keeps a batch whose write the hard
	// shutdown cancelled for the next start; a memory buffer's is lost then.
	keepsFlights bool
	lost         stopLoss // batches in flight that the hard shutdown booked as lost

	// failed counts the writes that failed to be retried since the last one that
	// succeeded, from failingSince on, for the one line that says the sink recovered.
	failed       int
	failingSince time.Time
}

// stopLoss counts the metrics of the batches in flight that the hard shutdown booked as
// lost, so that Close reports them with what the buffer still holds: unknown is the part
// whose write was sent and had no answer (morse.ReasonUnknown).
type stopLoss struct{ left, unknown atomic.Int64 }

func (l *stopLoss) add(n int, unknown bool) {
	l.left.Add(int64(n))
	if unknown {
		l.unknown.Add(int64(n))
	}
}

// flight is one batch being written and the result of its write.
type flight struct {
	batch []morse.Metric
	err   error
	probe flightProbe // whether the sink may hold the batch without having answered
}

func newFlusher(buf Buffer, send sender, batchSize, maxInFlight int) *flusher {
	f := &flusher{buf: buf, send: send, batchSize: batchSize, flights: make([]flight, maxInFlight)}
	// A batch never holds more than the buffer, so that bounds the slices kept for them.
	for i := range f.flights {
		f.flights[i].batch = make([]morse.Metric, 0, min(batchSize, buf.Cap()))
	}
	return f
}

// flush writes batches until what the buffer held at the start is written (it returns nil)
// or a write must be retried (it returns that write's error). Metrics that arrive during the
// flush wait for the next one: under a steady flood an unbounded flush would never end, and
// the full-batch signal starts the next flush at once anyway. While a backlog remains, up
// to maxInFlight batches are written at once.
func (f *flusher) flush(ctx context.Context) error {
	for todo := f.buf.Len(); todo > 0; {
		n := f.begin(ctx, &todo)
		if n == 0 {
			return nil
		}
		// A memory buffer has room again as soon as the batches are taken: let the
		// sources that wait for it go on while the batches are written.
		f.gate.Observe(f.buf.Len())
		f.writing.Start(time.Now())
		f.write(ctx, f.flights[:n])
		f.writing.Done()
		// A context ended now is the hard shutdown's: nothing will retry what failed.
		settled, err := f.end(f.flights[:n], ctx.Err() != nil)
		release(f.flights[:n])
		if !settled {
			return nil // Close booked the round; its context is cancelled, so the loop ends
		}
		// A sink that answered is keeping up; one that must be retried is not, and its
		// buffer evicts rather than holding sources back while it backs off.
		f.gate.SetHealthy(err == nil)
		size := f.buf.Len()
		f.stats.bufferSize.Set(int64(size))
		f.gate.Observe(size)
		if err != nil {
			return err
		}
	}
	return nil
}

// begin starts a round: it takes batches out of the buffer unless the hard shutdown has
// come (ctx ended) or Close has given up on the flush loop, and returns how many. After the
// hard shutdown, what the buffer holds is Close's to report, not a write's to try.
func (f *flusher) begin(ctx context.Context, todo *int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.abandoned || ctx.Err() != nil {
		return 0
	}
	n := f.take(todo)
	f.inRound = n > 0
	return n
}

// end books a round whose writes have all returned and reports true, unless Close booked
// it already: then its metrics were counted as lost at shutdown, and are not counted again
// whatever the writes answered. A write that succeeded after all is logged, in one line for
// the round (no round starts after it), since those metrics may be stored although they
// were counted as dropped.
func (f *flusher) end(fs []flight, stopped bool) (settled bool, retryErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inRound = false
	if !f.abandoned {
		return true, f.settle(fs, stopped)
	}
	stored := 0
	for i := range fs {
		if morse.Classify(fs[i].err) == morse.OutcomeWritten {
			stored += len(fs[i].batch)
		}
	}
	if stored > 0 {
		f.log.Warn("a write abandoned at shutdown succeeded after all: its metrics, booked at shutdown as not "+
			"written (dropped and dead-lettered, or kept by a disk buffer), may be stored too", "metrics", stored)
	}
	return false, nil
}

// abandon is Close giving up on the flush loop. It returns copies of the metrics of the
// round in flight, if any, which the caller then books: unknown holds the batches whose
// write was sent and has not answered, unsent the others. Both are nil when no round is in
// flight: the last one was booked by settle, and no other will start.
func (f *flusher) abandon() (unknown, unsent []morse.Metric) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.abandoned = true
	if !f.inRound {
		return nil, nil
	}
	for i := range f.flights {
		fl := &f.flights[i] // the writes only read the batches
		if fl.probe.unknown() {
			unknown = append(unknown, fl.batch...)
		} else {
			unsent = append(unsent, fl.batch...)
		}
	}
	return unknown, unsent
}

// take takes up to maxInFlight batches of what is left to do out of the buffer.
func (f *flusher) take(todo *int) int {
	n := 0
	for n < len(f.flights) && *todo > 0 {
		fl := &f.flights[n]
		fl.batch = f.buf.Batch(fl.batch[:0], min(*todo, f.batchSize))
		if len(fl.batch) == 0 {
			break
		}
		*todo -= len(fl.batch)
		n++
	}
	return n
}

// write sends the batches, concurrently when there are several, and returns when every
// send has.
func (f *flusher) write(ctx context.Context, fs []flight) {
	send := func(fl *flight) {
		start := time.Now()
		fl.probe.state.Store(probeIdle)
		fl.err = f.send.send(withProbe(ctx, &fl.probe), fl.batch)
		f.stats.writeTimeNs.Add(int64(time.Since(start)))
	}
	if len(fs) == 1 {
		send(&fs[0])
		return
	}
	var wg sync.WaitGroup
	for i := range fs {
		wg.Go(func() { send(&fs[i]) })
	}
	wg.Wait()
}

// settle books the writes in the order their batches left the buffer and returns the first
// error to retry, if any. Batches to retry go back in reverse order, so that the oldest is at
// the head again and, if the buffer filled up meanwhile, eviction takes the oldest metrics
// of all. After the hard shutdown (stopped) nothing is retried, and a memory buffer's batch
// that failed is booked as lost at once, once (lostAtStop), rather than put back into a
// buffer that may have filled up meanwhile and would evict it as buffer_full.
func (f *flusher) settle(fs []flight, stopped bool) (retryErr error) {
	for i := range fs {
		if morse.Classify(fs[i].err) == morse.OutcomeRetry {
			if stopped && !f.keepsFlights {
				f.stats.writeErrors.Incr()
				f.lostAtStop(&fs[i])
				continue
			}
			retryErr = cmp.Or(retryErr, fs[i].err)
			continue
		}
		f.buf.Accept(fs[i].batch)
		settleTracked(fs[i].batch, fs[i].err)
		if fs[i].err != nil {
			f.stats.writeErrors.Incr()
		}
		f.stats.wrote(f.drops.settled(fs[i].batch, fs[i].err))
	}
	for i := len(fs) - 1; i >= 0; i-- {
		if morse.Classify(fs[i].err) == morse.OutcomeRetry && (!stopped || f.keepsFlights) {
			f.stats.writeErrors.Incr()
			f.buf.Reject(fs[i].batch)
		}
	}
	if retryErr != nil {
		f.logRetry(retryErr)
	}
	f.noteRecovery(fs)
	return retryErr
}

// noteRecovery logs one line when a write succeeds after writes that failed and were to be
// retried, so that an operator who saw the warnings of a failing sink (throttled, and
// silent once it answers) sees when it answered again, and after how much.
func (f *flusher) noteRecovery(fs []flight) {
	for i := range fs {
		switch {
		case morse.Classify(fs[i].err) == morse.OutcomeRetry:
			if f.failed == 0 {
				f.failingSince = time.Now()
				f.stats.failingSince.Store(f.failingSince.UnixNano())
			}
			f.failed++
		case fs[i].err == nil && f.failed > 0:
			if f.log != nil {
				f.log.Info("write succeeded again: the output recovered", "failed_attempts", f.failed,
					"failing_for", time.Since(f.failingSince).Round(time.Millisecond).String())
			}
			f.failed = 0
			f.stats.failingSince.Store(0)
		}
	}
}

// lostAtStop books a batch whose write the hard shutdown ended without success: under
// morse.ReasonUnknown when it was sent and had no answer, so the sink may hold it, and under
// morse.ReasonShutdown when the sink never had it or said it did not store it.
func (f *flusher) lostAtStop(fl *flight) {
	f.buf.Accept(fl.batch)
	morse.SettleTracked(fl.batch, false)
	unknown := fl.probe.unknown()
	reason := morse.ReasonShutdown
	if unknown {
		reason = morse.ReasonUnknown
	}
	f.lost.add(len(fl.batch), unknown)
	f.drops.lose(DropEvent{Reason: reason, Count: len(fl.batch), Metrics: fl.batch, Err: fl.err})
}

// settleTracked reports the tracked metrics of a final write: delivered when the sink stored
// them. A partial write that names the positions it dropped delivers the others (an IoTDB
// 507, an InfluxDB partial write); one that only counts its drops delivers none, as it
// cannot tell which were stored.
func settleTracked(batch []morse.Metric, err error) {
	if morse.Classify(err) != morse.OutcomePartial {
		morse.SettleTracked(batch, err == nil)
		return
	}
	pw := asPartial(err)
	dropped := make([]bool, len(batch))
	for _, part := range append([]*morse.PartialWriteError{pw}, pw.More...) {
		if len(part.Indices) == 0 {
			morse.SettleTracked(batch, false)
			return
		}
		for _, i := range part.Indices {
			if i >= 0 && i < len(batch) {
				dropped[i] = true
			}
		}
	}
	for i := range batch {
		morse.SettleTracked(batch[i:i+1], !dropped[i])
	}
}

// release lets go of the metrics of settled batches. The slices are kept for the next
// flush, and until it fills them they would keep up to maxInFlight batches of metrics that
// were written, or are back in the buffer, alive: the collector would count them as live and
// size the heap for them.
func release(fs []flight) {
	for i := range fs {
		clear(fs[i].batch)
		fs[i].batch = fs[i].batch[:0]
	}
}

// run is the flush goroutine. It waits for the scheduler, then flushes until the buffer is
// empty or a write fails. A failed write is retried after the retry stage's delay, for as
// long as it takes. When stop closes it drains what is left until ctx ends.
func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	defer w.sched.close()
	if !w.awaitTurn(ctx) {
		return
	}
	if !w.connectAtStart(ctx) {
		w.drain(ctx)
		return
	}
	for {
		if !w.sched.wait(w.stopping, w.flushDue) {
			w.drain(ctx)
			return
		}
		for {
			w.reportEvictions()
			err := w.flusher.flush(ctx)
			if err == nil {
				break
			}
			if !w.sched.sleep(w.stopping, retryDelay(err)) {
				w.drain(ctx)
				return
			}
		}
	}
}

// connectAtStart connects an output that serves (morse.StartConnector) before the first
// flush, trying again at the retry policy's pace until it succeeds, each attempt bounded
// by the write timeout. It returns false if the writer stops first. Metrics buffer
// meanwhile, as they do while the first flush's connect fails.
func (w *Writer) connectAtStart(ctx context.Context) bool {
	sc, ok := w.out.(morse.StartConnector)
	if !ok || !sc.ConnectsAtStart() {
		return true
	}
	policy := backoff.New(w.opts.RetryInitial, w.opts.RetryMax)
	for {
		cctx, cancel := context.WithTimeout(ctx, w.opts.WriteTimeout)
		err := w.conn.connect(cctx)
		cancel()
		if err == nil {
			return true
		}
		w.logRetry(err)
		if !w.sched.sleep(w.stopping, policy.Next()) {
			return false
		}
	}
}

// awaitTurn holds the flush loop, while the buffer fills, until the writer that used the
// output before has closed it (Options.ConnectAfter). A soft shutdown waits for that too, to
// drain what is buffered; the hard one gives up, and the output is left untouched.
func (w *Writer) awaitTurn(ctx context.Context) bool {
	if w.opts.ConnectAfter != nil {
		select {
		case <-w.opts.ConnectAfter:
		case <-ctx.Done():
			return false
		}
	}
	w.hadTurn.Store(true)
	return true
}

// flushDue reports whether the flush loop should write now rather than at the next interval:
// a full batch is waiting, or sources are held back until the buffer goes down.
func (w *Writer) flushDue() bool {
	return w.buf.Len() >= w.opts.BatchSize || w.gate.Closed()
}

// drain is the final flush of a soft shutdown: it writes until the buffer is empty, backing
// off between failures, until ctx ends at Close's deadline.
func (w *Writer) drain(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.flusher.flush(ctx)
		if err == nil {
			if w.buf.Len() == 0 {
				return
			}
			continue // a Write that raced with Close added more
		}
		t := time.NewTimer(retryDelay(err))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// reportEvictions logs how many metrics the full buffer evicted since the last report. It
// runs once per flush, never per metric, which throttles it to the flush pace.
func (w *Writer) reportEvictions() {
	w.updateGauges()
	total := w.stats.bufferFull.Get()
	if n := total - w.lastEvicts; n > 0 {
		w.log.Warn("buffer full: oldest metrics dropped", "dropped_since_last_report", n,
			"buffer_limit", w.buf.Cap())
	}
	w.lastEvicts = total
}

func (w *Writer) logRetry(err error) {
	if ok, suppressed := w.retryLog.Allow(time.Now()); ok {
		w.log.Warn("write failed, will retry", "error", err, "attempt", w.retry.attempts(),
			"buffered", w.buf.Len(), throttle.SuppressedKey, suppressed)
	}
}
