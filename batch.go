package morse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse/internal/backoff"
	"github.com/morse-agent/morse/internal/selfstat"
)

// BatchOptions configure a BatchWriter. Zero values take the defaults shown.
type BatchOptions struct {
	BatchSize     int           // metrics per write; 1000
	FlushInterval time.Duration // time between flushes; 10s
	FlushJitter   time.Duration // each wait is FlushInterval ± FlushJitter, uniform; 0
	BufferLimit   int           // metrics held while the sink is slow or down; 10000
	// Buffer replaces the in-memory ring, for example with a disk buffer. Its capacity then
	// takes the place of BufferLimit.
	Buffer Buffer
	// MaxInFlight is how many batches may be written at once while a backlog remains; 1.
	// More than one hides a sink's round trip, which otherwise caps throughput at one batch
	// per round trip, but batches may then arrive out of order, and the buffer may hold up
	// to MaxInFlight batches beyond BufferLimit while they are in flight. Only outputs whose
	// Write is safe for concurrent use may have more than one (see ConcurrentWriter).
	MaxInFlight int
	// RetryInitial and RetryMax bound the exponential backoff of a failing sink; 1s and 60s.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// OnDrop is called, from the flush goroutine, with every batch that is dropped for good
	// and the error that dropped it. The slice is reused after the call returns.
	OnDrop func(batch []Metric, err error)
	// Logger receives the writer's warnings; slog.Default() if nil.
	Logger *slog.Logger
	// Name names the output in logs and self-metrics; "output" if empty.
	Name string
	// Alias, when set, is added to the self-metrics' tags to tell apart two outputs of the
	// same plugin, as Telegraf's alias option does.
	Alias string

	// stats is where the agent wants the self-metrics; a private registry if nil. The agent
	// also passes its own totals, which every output adds to.
	stats                      *selfstat.Registry
	agentWritten, agentDropped *Counter
}

// Defaults for BatchOptions and the [agent] table.
const (
	DefaultBatchSize     = 1000
	DefaultBufferLimit   = 10000
	DefaultFlushInterval = 10 * time.Second
	DefaultRetryInitial  = time.Second
	DefaultRetryMax      = 60 * time.Second

	// maxInFlight bounds MaxInFlight: a few writes in flight hide a round trip, and many
	// more would only hold more metrics outside the buffer's limit.
	maxInFlight = 64
)

func (o *BatchOptions) setDefaults() {
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.BufferLimit == 0 {
		o.BufferLimit = DefaultBufferLimit
	}
	if o.RetryInitial == 0 {
		o.RetryInitial = DefaultRetryInitial
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 1
	}
	if o.RetryMax == 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "output"
	}
}

// Validate reports options that cannot work.
func (o *BatchOptions) Validate() error {
	var errs []error
	if o.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("BatchSize %d: must be at least 1", o.BatchSize))
	}
	if o.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("FlushInterval %s: must be positive", o.FlushInterval))
	}
	if o.FlushJitter < 0 || o.FlushJitter >= o.FlushInterval {
		errs = append(errs, fmt.Errorf("FlushJitter %s: must be at least 0 and less than FlushInterval %s", o.FlushJitter, o.FlushInterval))
	}
	if o.Buffer == nil && o.BufferLimit < 1 {
		errs = append(errs, fmt.Errorf("BufferLimit %d: must be at least 1", o.BufferLimit))
	}
	if o.MaxInFlight < 1 || o.MaxInFlight > maxInFlight {
		errs = append(errs, fmt.Errorf("MaxInFlight %d: must be between 1 and %d", o.MaxInFlight, maxInFlight))
	}
	if o.RetryInitial <= 0 || o.RetryMax < o.RetryInitial {
		errs = append(errs, fmt.Errorf("RetryInitial %s and RetryMax %s: need 0 < initial <= max", o.RetryInitial, o.RetryMax))
	}
	return errors.Join(errs...)
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("morse: batch writer is closed")

// UnsentError reports the metrics that were still buffered when Close gave up.
type UnsentError struct {
	Output string
	Left   int
}

func (e *UnsentError) Error() string {
	return fmt.Sprintf("output %s: %d metrics left unsent", e.Output, e.Left)
}

// BatchWriter buffers metrics for one Output and writes them in batches from a goroutine of
// its own. Write never blocks on the network, and it is safe for concurrent use.
type BatchWriter struct {
	out   Output
	opts  BatchOptions
	buf   Buffer
	mem   *MemoryBuffer // buf when it is the default, for the single-lock fast path
	stats *outputStats
	log   *slog.Logger

	ready    chan struct{} // a full batch is waiting; capacity 1
	stopping chan struct{} // closed by Close
	done     chan struct{} // closed when the flush goroutine has ended
	runCtx   context.Context
	cancel   context.CancelFunc

	closed    atomic.Bool
	closeOnce sync.Once
	// writingSince is when the round of writes in flight began, in Unix nanoseconds; zero
	// while none is (between rounds, and while the writer backs off).
	writingSince atomic.Int64
	// yield gives up the processor for a moment (see yieldIfBehind); replaced in tests.
	yield    func()
	closeErr error

	// Owned by the flush goroutine.
	flights    []flight // one per batch that may be in flight
	connected  bool
	backoff    *backoff.Policy
	jitter     func(n int64) int64 // uniform in [0, n)
	dropLog    throttle
	retryLog   throttle
	lastEvicts int64
}

// NewBatchWriter starts a writer for out. It connects in the background and keeps retrying
// the connection, buffering meanwhile, so a sink that is down at start loses nothing.
func NewBatchWriter(out Output, opts BatchOptions) (*BatchWriter, error) {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("batch writer %s: %w", opts.Name, err)
	}
	w := &BatchWriter{
		out: out, opts: opts, buf: opts.Buffer,
		log:      opts.Logger.With("output", opts.Name),
		ready:    make(chan struct{}, 1),
		stopping: make(chan struct{}),
		done:     make(chan struct{}),
		backoff:  backoff.New(opts.RetryInitial, opts.RetryMax),
		jitter:   rand.Int64N,
		yield:    yieldProcessor,
		dropLog:  throttle{every: 10 * time.Second},
		retryLog: throttle{every: 10 * time.Second},
	}
	if w.buf == nil {
		w.mem = NewMemoryBuffer(opts.BufferLimit)
		w.buf = w.mem
	}
	// A batch never holds more than the buffer, so that bounds the slices we keep for them.
	w.flights = make([]flight, opts.MaxInFlight)
	for i := range w.flights {
		w.flights[i].batch = make([]Metric, 0, min(opts.BatchSize, w.buf.Cap()))
	}
	tags := map[string]string{"output": opts.Name}
	if opts.Alias != "" {
		tags["alias"] = opts.Alias
	}
	w.stats = newOutputStats(opts.stats, tags)
	w.stats.agentWritten, w.stats.agentDropped = opts.agentWritten, opts.agentDropped
	w.stats.bufferLimit.Set(int64(w.buf.Cap()))
	w.stats.bufferSize.Set(int64(w.buf.Len()))
	w.runCtx, w.cancel = context.WithCancel(context.Background())
	go w.run()
	return w, nil
}

// Write adds one metric to the buffer. When the buffer is full the oldest metric is evicted
// and counted. It returns ErrClosed after Close.
func (w *BatchWriter) Write(m Metric) error {
	if w.closed.Load() {
		w.stats.drop(ReasonShutdown, 1)
		return ErrClosed
	}
	var evicted bool
	var n int
	if w.mem != nil {
		evicted, n = w.mem.add(m)
	} else {
		evicted = w.buf.Add(m) > 0
		n = w.buf.Len()
	}
	w.added(1, b2i(evicted), n)
	return nil
}

// WriteBatch adds several metrics at once, under one lock.
func (w *BatchWriter) WriteBatch(ms []Metric) error {
	if w.closed.Load() {
		w.stats.drop(ReasonShutdown, len(ms))
		return ErrClosed
	}
	evicted := w.buf.Add(ms...)
	w.added(len(ms), evicted, w.buf.Len())
	return nil
}

func (w *BatchWriter) added(n, evicted, size int) {
	w.stats.added.Add(int64(n))
	w.stats.drop(ReasonBufferFull, evicted)
	w.stats.bufferSize.Set(int64(size))
	if size >= w.opts.BatchSize {
		select {
		case w.ready <- struct{}{}:
		default:
		}
		w.yieldIfBehind(n, size)
	}
}

// yieldProcessor parks the caller for a microsecond. runtime.Gosched would not do: when
// every P is busy parsing, a P polls the network only when it has nothing else to run, and
// Gosched hands the yielding goroutine straight back to it, so an output waiting for its
// sink's answers would wait for the runtime's monitor, about every 10 ms. Four writes in
// flight per 10 ms cap the output at 400,000 lines a second, below what two HTTP senders
// push in. Parking lets the P look for work, network completions included.
func yieldProcessor() { time.Sleep(time.Microsecond) }

// yieldEvery is how many added metrics apart a writer that is behind yields the processor.
const yieldEvery = 128

// yieldIfBehind lets the goroutine that adds metrics give up the processor now and then
// while the output is writing a backlog of more than two batches. A listener flooded flat out
// always has data to parse, and on a busy core it would take the CPU the output needs to
// send what it accepted, and then evict it. It never waits for room in the buffer. An
// output that is down (backing off) is not writing, and one whose writes have hung for
// yieldWhileWritingFor is waiting on its sink, not short of CPU: their listeners do not
// yield at all, and eviction goes on as before.
func (w *BatchWriter) yieldIfBehind(n, size int) {
	if size < 2*w.opts.BatchSize {
		return
	}
	// Yield when the running total of added metrics passes a multiple of yieldEvery.
	if w.stats.added.Get()%yieldEvery >= int64(n) {
		return
	}
	since := w.writingSince.Load()
	if since != 0 && time.Now().UnixNano()-since < int64(yieldWhileWritingFor) {
		w.yield()
	}
}

// yieldWhileWritingFor is how long a round of writes may be in flight before its output is
// taken to be waiting on its sink rather than on the CPU.
const yieldWhileWritingFor = 100 * time.Millisecond

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Stats returns a snapshot of the writer's counters.
func (w *BatchWriter) Stats() WriterStats {
	s := w.stats.snapshot()
	s.BufferSize = w.buf.Len()
	return s
}

// Close stops the flush loop, then flushes what is buffered until the buffer is empty or ctx
// ends, and closes the output. Writes in flight are cancelled when ctx ends, so Close returns
// soon after. If metrics are left, the error is an *UnsentError.
func (w *BatchWriter) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		close(w.stopping)
		select {
		case <-w.done:
		case <-ctx.Done():
			w.cancel()
			<-w.done
		}
		w.cancel()
		var errs []error
		if left := w.buf.Len(); left > 0 {
			errs = append(errs, &UnsentError{Output: w.opts.Name, Left: left})
		}
		if err := w.out.Close(); err != nil {
			errs = append(errs, fmt.Errorf("output %s: close: %w", w.opts.Name, err))
		}
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}
