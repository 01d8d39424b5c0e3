// Package batch is morse's batching writer: a bounded buffer per output and a flush loop
// that writes it in batches, retries what can succeed and drops, counts and reports what
// never can. It is built as a pipeline of small parts:
//
//	Write ─► Buffer ─► scheduler ─► flusher ─► retry ─► isolate ─► timeout ─► Output.Write
//	            │                       │
//	            └─ evictions ─┐         └─ permanent errors, partial writes ─┐
//	                          └──────────► dropper: counters, OnDrop, log ◄───┘
//
// The agent runs one Writer per output; programs embed one directly with NewWriter.
package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/backoff"
	"github.com/morse-agent/morse/internal/flowgate"
	"github.com/morse-agent/morse/internal/throttle"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("morse: batch writer is closed")

// UnsentError reports the metrics that Close gave up on: those still buffered, and those
// in flight whose write it cancelled. They are reported to OnDrop and counted as dropped,
// each once: under morse.ReasonUnknown the Unknown ones, whose write was sent and had no
// answer, so the sink may hold them; under morse.ReasonShutdown the rest.
type UnsentError struct {
	Output  string
	Left    int // every metric left unsent, Unknown included
	Unknown int // of Left, those sent with no answer: lost or stored, nobody knows
}

// Error says how many metrics the output left unsent.
func (e *UnsentError) Error() string {
	if e.Unknown > 0 {
		return fmt.Sprintf("output %s: %d metrics left unsent (%d of them sent with no answer: lost or stored)",
			e.Output, e.Left, e.Unknown)
	}
	return fmt.Sprintf("output %s: %d metrics left unsent", e.Output, e.Left)
}

// Writer buffers metrics for one Output and writes them in batches from a goroutine of its
// own. Write never blocks on the network, and it is safe for concurrent use.
type Writer struct {
	out     morse.Output
	opts    Options
	buf     Buffer
	stats   *outputStats
	drops   *dropper
	sched   *scheduler
	retry   *retrySender
	conn    *outputSender // the chain's last stage, which connects the output
	flusher *flusher
	gate    *flowgate.Gate // backpressure: holds WaitForRoom's callers while a backlog is written
	// fallback is the buffer, if it may hold metrics in memory that it promised to keep on
	// disk (fallback.go); nil otherwise.
	fallback fallbackBuffer
	log      *slog.Logger

	stopping chan struct{} // closed when Close begins: the soft shutdown
	done     chan struct{} // closed when the flush goroutine has ended
	closedCh chan struct{} // closed when Close has returned (Closed)
	hadTurn  atomic.Bool   // Options.ConnectAfter let the flush loop use the output
	hardStop context.CancelFunc

	closed    atomic.Bool
	bufClosed atomic.Bool // a persistent buffer was closed: its gauges keep their last values
	tracked   atomic.Bool // a tracked metric was buffered: evictions are handed over (WriteBatch)
	closeOnce sync.Once
	closeErr  error

	// Owned by the flush goroutine.
	retryLog   *throttle.Throttle
	lastEvicts int64
}

// NewWriter checks opts, prepares out (unless opts.Initialized) and starts the flush loop.
// The output connects in the background, on the first flush, and keeps retrying, buffering
// meanwhile, so a sink that is down at start loses nothing.
func NewWriter(out morse.Output, opts Options) (*Writer, error) {
	opts = opts.withDefaults(out)
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("batch writer %s: %w", opts.Name, err)
	}
	log := opts.Logger.With("output", opts.Name)
	if !opts.Initialized {
		if err := prepareOutput(out, log); err != nil {
			return nil, fmt.Errorf("batch writer %s: %w", opts.Name, err)
		}
	}
	w := &Writer{
		out: out, opts: opts, log: log,
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		closedCh: make(chan struct{}),
		retryLog: throttle.New(10 * time.Second),
	}
	tags := map[string]string{"output": opts.Name}
	if opts.Alias != "" {
		tags["alias"] = opts.Alias
	}
	w.stats = newOutputStats(opts.Stats, withID(tags, opts.ID))
	w.stats.setTotals(opts.Totals)
	w.drops = newDropper(cmp.Or(opts.Alias, opts.Name), w.stats, opts.OnDrop, log)
	if opts.DeadLetter != nil {
		w.drops.deadLetter = opts.DeadLetter
		w.stats.withDeadLetter()
	}
	buf, err := w.newBuffer()
	if err != nil {
		return nil, fmt.Errorf("batch writer %s: buffer: %w", opts.Name, err)
	}
	w.buf = buf
	w.stats.bufferLimit.Set(int64(buf.Cap()))
	w.stats.bufferSize.Set(int64(buf.Len()))

	w.sched = newScheduler(opts.FlushInterval, opts.FlushJitter, opts.BatchSize, rand.Int64N)
	w.conn = &outputSender{out: out}
	w.retry = &retrySender{
		next: &isolateSender{
			next: &timeoutSender{next: w.conn, timeout: opts.WriteTimeout},
		},
		policy: backoff.New(opts.RetryInitial, opts.RetryMax),
		maxAge: opts.RetryMaxAge, unauthMaxAge: opts.UnauthorizedRetryMaxAge,
	}
	w.flusher = newFlusher(buf, w.retry, opts.BatchSize, opts.MaxInFlight)
	_, w.flusher.keepsFlights = buf.(PersistentBuffer)
	w.flusher.drops, w.flusher.stats, w.flusher.logRetry, w.flusher.log = w.drops, w.stats, w.logRetry, log
	w.gate = newGate(opts, buf, w.sched)
	w.flusher.gate = w.gate
	w.watchFallback()

	ctx, cancel := context.WithCancel(context.Background())
	w.hardStop = cancel
	go w.run(ctx)
	return w, nil
}

// prepareOutput validates out, gives it its logger and initialises it, as the agent does
// for an output it loads from a config.
func prepareOutput(out morse.Output, log *slog.Logger) error {
	if v, ok := out.(morse.Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("output config: %w", err)
		}
	}
	if l, ok := out.(morse.LoggerSetter); ok {
		l.SetLogger(log)
	}
	if i, ok := out.(morse.Initializer); ok {
		if err := i.Init(); err != nil {
			return fmt.Errorf("output init: %w", err)
		}
	}
	return nil
}

func (w *Writer) newBuffer() (Buffer, error) {
	ev := Eviction{Report: w.evicted, Keep: w.opts.OnDrop != nil, KeepTracked: &w.tracked}
	if w.opts.NewBuffer != nil {
		return w.opts.NewBuffer(w.opts.BufferLimit, ev)
	}
	return NewBoundedMemoryBuffer(w.opts.BufferLimit, ev, MemoryBounds{MaxBytes: w.opts.BufferMaxBytes,
		MaxAge: w.opts.BufferMaxAge, Budget: w.opts.MemoryBudget}), nil
}

// Write adds one metric to the buffer. When the buffer is full the oldest metric is evicted
// and counted. It never blocks on the network. After Close it drops m, counted under
// morse.ReasonShutdown, and returns ErrClosed.
func (w *Writer) Write(m morse.Metric) error {
	if w.closed.Load() {
		w.refused([]morse.Metric{m})
		return ErrClosed
	}
	if m.Tracked() {
		return w.WriteBatch([]morse.Metric{m}) // which takes its reference
	}
	w.added(1, w.buf.Add(m))
	return nil
}

// WriteBatch adds several metrics at once, in order, as Write would one by one but cheaper.
// It keeps no reference to ms.
//
// Tracked metrics (morse.TrackingAccumulator) hold a reference on their group while the
// writer holds them: WriteBatch takes it, with one call of morse.RetainTracked, and the
// writer gives it back with morse.SettleTracked once they leave for good: written (the
// flusher), evicted (evicted), dropped at shutdown (dropLeft, abandonFlight) or refused
// after Close (refused). A persistent buffer keeps what it takes across a crash of the
// process, so it settles a tracked metric, delivered, as soon as the metric is on its disk;
// only a power cut within the buffer's sync interval can lose it then, which is the disk
// buffer's own promise. What it holds in memory because its disk refused it stays
// retained until it reaches the disk, or leaves the buffer as from a memory buffer
// (diskspill.go).
func (w *Writer) WriteBatch(ms []morse.Metric) error {
	if w.closed.Load() {
		w.refused(ms)
		return ErrClosed
	}
	// From the first tracked metric on, the buffer hands over what it evicts, so that evicted
	// metrics give their references back.
	if morse.RetainTracked(ms) > 0 && !w.tracked.Load() {
		w.tracked.Store(true)
	}
	w.added(len(ms), w.buf.AddBatch(ms))
	return nil
}

// refused drops what arrives after Close, counted under shutdown. It runs in the goroutine
// of the input that added them, so they are not dead-lettered (see DeadLetter). Tracked
// metrics among them mark their groups not delivered.
func (w *Writer) refused(ms []morse.Metric) {
	w.drops.drop(DropEvent{Reason: morse.ReasonShutdown, Count: len(ms), Metrics: ms, Err: ErrClosed}, false)
	if morse.RetainTracked(ms) > 0 {
		morse.SettleTracked(ms, false)
	}
}

// evicted is the Eviction report of the writer's buffer: evicted tracked metrics are done,
// not delivered.
func (w *Writer) evicted(reason string, n int, ms []morse.Metric) {
	morse.SettleTracked(ms, false)
	w.drops.evicted(reason, n, ms)
}

func (w *Writer) added(n, size int) {
	w.stats.added.Add(int64(n))
	w.stats.bufferSize.Set(int64(size))
	w.sched.added(size)
	w.gate.Observe(size)
}

// newGate sets the water marks of backpressure on the buffer. When the gate closes the
// flush loop is woken, so that a buffer whose high-water mark is below a full batch is
// written at once rather than at the next flush interval.
func newGate(opts Options, buf Buffer, sched *scheduler) *flowgate.Gate {
	limit := float64(buf.Cap())
	high := max(1, int(math.Ceil(opts.HighWater*limit)))
	low := min(high-1, int(opts.LowWater*limit))
	return flowgate.New(high, low, buf.Len, sched.kick)
}

// WaitForRoom blocks while the output keeps up with its sink (its writes succeed and it is
// not backing off) and its buffer is above the high-water mark, until the buffer falls to
// the low-water mark, the output fails or closes, or ctx ends; it then returns ctx's error.
// A listener that can push back on its senders calls it before it adds more, so a sender
// that outruns a healthy sink is slowed instead of having its oldest metrics evicted. An
// output that fails never holds anyone back: its buffer evicts, and counts, instead; but a
// disk buffer that holds metrics in memory because its disk refused them does, whatever the
// sink (WaitForDisk).
func (w *Writer) WaitForRoom(ctx context.Context) error { return w.gate.Wait(ctx) }

// HoldsBack reports whether WaitForRoom would block now.
func (w *Writer) HoldsBack() bool { return w.gate.Closed() }

// WritingFor is how long the flush loop has been writing its current round of batches at
// now, and false while it waits for the next flush or backs off. Each attempt is bounded by the
// write timeout, so a value well past it means a write that ignores its context has wedged
// the loop, which a watchdog should not hide.
func (w *Writer) WritingFor(now time.Time) (time.Duration, bool) {
	return w.flusher.writing.For(now)
}

// updateGauges publishes the buffer's bytes and age, for a buffer that knows them. The flush
// loop calls it once per flush, so the self-metrics are at most a flush old.
func (w *Writer) updateGauges() {
	if g, ok := w.buf.(BufferGauges); ok && !w.bufClosed.Load() {
		w.stats.bufferBytes.Set(g.Bytes())
		w.stats.bufferAge.Set(int64(g.OldestAge()))
	}
	if w.fallback != nil && !w.bufClosed.Load() {
		w.stats.memFallback.Set(int64(w.fallback.MemoryFallback()))
	}
}

// WriteTimeout is the bound of each write attempt (Options.WriteTimeout, or the output's).
func (w *Writer) WriteTimeout() time.Duration { return w.opts.WriteTimeout }

// CountFiltered counts n metrics that a filter in front of the writer rejected, so that
// they appear in the output's metrics_filtered.
func (w *Writer) CountFiltered(n int) { w.stats.filtered.Add(int64(n)) }

// Stats returns a snapshot of the writer's counters.
func (w *Writer) Stats() Stats {
	w.updateGauges()
	s := w.stats.snapshot()
	s.BufferSize = w.buf.Len()
	return s
}

// UnregisterStats removes the writer's self-metrics from their registry, for an output that
// a reload took away once it is closed.
func (w *Writer) UnregisterStats() { w.stats.unregister() }

// Close shuts the writer down in two steps. The soft shutdown stops the flush schedule and
// writes what is buffered, backing off between failures, until the buffer is empty or ctx
// ends. Then the hard shutdown cancels the writes in flight, so Close returns soon after
// ctx ends (at most abandonAfter later), reports what is left to OnDrop and closes the
// output. What is left is each metric still buffered or in a cancelled write, reported once:
// under morse.ReasonUnknown a write that was sent and had no answer, under
// morse.ReasonShutdown the rest. If metrics were left, the error is an *UnsentError. A
// PersistentBuffer keeps what is left, in flight too, for the next start instead: nothing
// is dropped, and the buffer is closed.
func (w *Writer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		w.gate.Disable()  // nobody waits on an output that is going away
		close(w.stopping) // soft: the flush loop drains
		select {
		case <-w.done:
		case <-ctx.Done():
			w.hardStop()
			w.awaitFlushLoop()
		}
		w.hardStop()
		var errs []error
		if pb, ok := w.buf.(PersistentBuffer); ok {
			// What a persistent buffer holds is kept for the next start, not lost.
			left := pb.Len()
			w.updateGauges()
			w.bufClosed.Store(true)
			if err := pb.Close(); err != nil {
				errs = append(errs, fmt.Errorf("output %s: buffer: %w", w.opts.Name, err))
			}
			if left > 0 {
				w.log.Info("metrics kept in the buffer for the next start", "buffered", left)
			}
		} else if left, unknown := w.dropLeft(); left > 0 {
			errs = append(errs, &UnsentError{Output: w.opts.Name, Left: left, Unknown: unknown})
		}
		if mb, ok := w.buf.(*MemoryBuffer); ok {
			mb.leaveBudget() // and with it what an abandoned write still has in flight
		}
		if w.hadTurn.Load() { // else the writer before still uses the output
			if err := w.out.Close(); err != nil {
				errs = append(errs, fmt.Errorf("output %s: close: %w", w.opts.Name, err))
			}
		}
		w.closeErr = errors.Join(errs...)
		close(w.closedCh)
	})
	return w.closeErr
}

// Closed is closed once Close has returned: the writer has written its last batch and
// closed the output. A new Writer of the same Output waits for it (Options.ConnectAfter).
func (w *Writer) Closed() <-chan struct{} { return w.closedCh }

// abandonAfter is how long the hard shutdown waits for a write to return once its context
// is cancelled. An output's Write must return soon after; one that ignores its context
// would otherwise keep the agent from ever exiting, and a service manager from restarting
// it, so the writer gives up on it and the batch it holds.
const abandonAfter = 500 * time.Millisecond

// awaitFlushLoop waits for the flush goroutine to end after the hard shutdown, at most
// abandonAfter.
func (w *Writer) awaitFlushLoop() {
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.abandonFlight()
	}
}

// abandonFlight gives up on a flush loop whose write ignores its cancellation, and books
// the round in flight now, once: the flusher will not book it again when the write returns
// (flusher.end). Its metrics are counted as dropped at shutdown, and dead-lettered, even
// though a write that returns later may still store them: so written + dropped stays equal
// to added, and the operator learns of the doubt from a log line. A persistent buffer keeps
// a batch in flight for the next start (PersistentBuffer.Close), so nothing is dropped then.
func (w *Writer) abandonFlight() {
	unknown, unsent := w.flusher.abandon()
	if len(unknown)+len(unsent) == 0 {
		return // the round ended meanwhile and was booked; no other will start
	}
	w.log.Error("a write ignored its cancellation; closing without it", "waited", abandonAfter,
		"metrics", len(unknown)+len(unsent))
	if w.flusher.keepsFlights {
		return
	}
	err := fmt.Errorf("output %s: a write ignored its cancellation for %s", w.opts.Name, abandonAfter)
	for _, part := range []struct {
		ms     []morse.Metric
		reason string
	}{{unknown, morse.ReasonUnknown}, {unsent, morse.ReasonShutdown}} {
		morse.SettleTracked(part.ms, false)
		w.flusher.lost.add(len(part.ms), part.reason == morse.ReasonUnknown)
		w.drops.lose(DropEvent{Reason: part.reason, Count: len(part.ms), Metrics: part.ms, Err: err})
	}
}

// dropLeft takes what the buffer still holds out of it and reports it lost. It returns
// every metric left at shutdown, with the batches in flight that the hard shutdown booked,
// and of them those whose delivery is unknown.
func (w *Writer) dropLeft() (left, unknown int) {
	var ms []morse.Metric
	for w.buf.Len() > 0 {
		n := len(ms)
		ms = w.buf.Batch(ms, w.buf.Len())
		if len(ms) == n {
			break
		}
	}
	w.buf.Accept(ms)
	morse.SettleTracked(ms, false)
	w.stats.bufferSize.Set(int64(w.buf.Len()))
	w.drops.lose(DropEvent{Reason: morse.ReasonShutdown, Count: len(ms), Metrics: ms,
		Err: &UnsentError{Output: w.opts.Name, Left: len(ms)}})
	return len(ms) + int(w.flusher.lost.left.Load()), int(w.flusher.lost.unknown.Load())
}
