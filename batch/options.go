package batch

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// Options configure a Writer, like influxdb-java's BatchOptions. Zero values take the
// defaults shown.
type Options struct {
	BatchSize     int           // metrics per write; 1000
	FlushInterval time.Duration // time between flushes; 10s
	FlushJitter   time.Duration // each wait is FlushInterval ± FlushJitter, uniform; 0
	BufferLimit   int           // metrics held while the sink is slow or down; 10000

	// BufferMaxBytes and BufferMaxAge bound the memory buffer further than BufferLimit: past
	// either, the oldest metrics go, counted as buffer_bytes or too_old (see MemoryBuffer).
	// BufferMaxBytes counts MetricSize, the batches in flight included; zero takes
	// DefaultBufferMaxBytes. BufferMaxAge zero is no bound. A NewBuffer has bounds of its own.
	BufferMaxBytes int64
	BufferMaxAge   time.Duration
	// MemoryBudget, when set, bounds the memory buffer together with the other writers'
	// that share it (see MemoryBudget). The writer leaves it when it closes.
	MemoryBudget *MemoryBudget

	// HighWater and LowWater are the water marks of backpressure, as fractions of
	// BufferLimit; 0.8 and 0.6. While the output keeps up (its writes succeed and it is not
	// backing off) and its buffer holds HighWater·BufferLimit metrics or more, WaitForRoom
	// holds its callers back until the buffer is down to LowWater·BufferLimit. The gap keeps
	// listeners from stopping and starting at every batch, and the room above HighWater
	// takes what concurrent senders add between two waits.
	HighWater, LowWater float64

	// NewBuffer builds the buffer in place of the in-memory ring, for example a disk buffer.
	// It gets BufferLimit and the Eviction that the buffer must report evictions to.
	NewBuffer func(limit int, evict Eviction) (Buffer, error)

	// MaxInFlight is how many batches may be written at once while a backlog remains. Zero
	// takes the output's MaxConcurrentWrites when it implements morse.ConcurrentWriter, and
	// 1 otherwise. More than one hides a sink's round trip, which otherwise caps throughput
	// at one batch per round trip, but batches may then arrive out of order, and up to
	// MaxInFlight batches are outside the buffer while they are in flight.
	MaxInFlight int

	// WriteTimeout bounds each write attempt: past it the write is cancelled and the batch
	// retried. Zero takes the output's WriteTimeout when it implements morse.WriteTimeouter,
	// and DefaultWriteTimeout otherwise.
	WriteTimeout time.Duration

	// RetryInitial and RetryMax bound the exponential backoff of a failing sink; 1s and 60s.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// RetryMaxAge, when set, limits retries: a batch that fails again once it has failed
	// for that long is dropped for good under morse.ReasonRetryExpired (and
	// dead-lettered); each batch has its own age. Zero retries forever.
	// UnauthorizedRetryMaxAge, when set, is the limit instead for a failure that wraps
	// morse.ErrUnauthorized, over the batch's current run of such failures; zero takes
	// RetryMaxAge. See retryage.go.
	RetryMaxAge             time.Duration
	UnauthorizedRetryMaxAge time.Duration

	// OnDrop is called with every loss, exactly once per lost metric: evictions from a full
	// buffer, batches the sink refused for good, the refused part of a partial write, and
	// what is left at Close. It is called from the goroutine that caused the loss (an input
	// adding to a full buffer, or the flush loop), so it must be quick and must not call the
	// Writer. The sum of DropEvent.Count equals Stats().Dropped.
	OnDrop func(DropEvent)

	// DeadLetter, when set, receives every metric the sink refused for good (see DeadLetter).
	// The writer does not close it.
	DeadLetter DeadLetter

	// Logger receives the writer's warnings and, unless Initialized is set, becomes the
	// output's logger (morse.LoggerSetter); slog.Default() if nil.
	Logger *slog.Logger
	// Name names the output in logs and self-metrics; "output" if empty.
	Name string
	// Alias, when set, is added to the self-metrics' tags to tell apart two outputs of the
	// same plugin, as Telegraf's alias option does.
	Alias string

	// Initialized says that the caller has already validated and initialised the output and
	// given it its logger, as the agent does when it loads a config. Otherwise NewWriter does
	// it: Validate (morse.Validator), SetLogger (morse.LoggerSetter), then Init
	// (morse.Initializer).
	Initialized bool
	// ConnectAfter, when set, holds the writer's first Connect, and so every Write and its
	// Close of the output, until the channel is closed: pass the Closed channel of another
	// Writer that still uses the same Output, so that the old writer's last Write and Close
	// come before the new one's Connect. The writer buffers meanwhile. A writer closed
	// before its turn never touches the output, and counts what it holds as unsent.
	ConnectAfter <-chan struct{}

	// Stats is the registry of the self-metrics (internal_write); a private one if nil.
	Stats *selfstat.Registry
	// Totals, when set, receive this writer's counts too.
	Totals *Totals
	// ID, when set, tells this writer's self-metrics apart from another's with the same
	// Name and Alias: the "_id" tag (selfstat.IDTag) that inputs.internal shows with
	// per_instance, as Telegraf does.
	ID string
}

// Defaults for Options and the [agent] table.
const (
	DefaultBatchSize   = 1000
	DefaultBufferLimit = 10000
	// DefaultBufferMaxBytes is the least byte bound of a memory buffer (MetricSize) that
	// sets none: 32 MiB, which DefaultBufferLimit metrics stay under unless they average
	// over 3 KiB (a metric with five tags and ten fields takes about 1 KiB). It keeps a
	// flood of long lines into an idle agent, whose collector may let the heap grow to three
	// times what is live for the second before internal/gcpace adjusts, under 256 MiB
	// resident (issue 33). A larger buffer limit raises it: see DefaultMaxBytes.
	DefaultBufferMaxBytes = 32 << 20
	// DefaultBytesPerMetric is what DefaultMaxBytes allows each metric of the limit, so
	// that a metric_buffer_limit raised for ordinary metrics is still the bound they meet.
	DefaultBytesPerMetric = 3 << 10
	DefaultFlushInterval  = 10 * time.Second
	DefaultRetryInitial   = time.Second
	DefaultRetryMax       = 60 * time.Second
	// DefaultWriteTimeout bounds a write attempt of an output that has no timeout option.
	DefaultWriteTimeout = 30 * time.Second

	// DefaultHighWater and DefaultLowWater are the water marks of backpressure.
	DefaultHighWater = 0.8
	DefaultLowWater  = 0.6

	// MaxInFlightLimit bounds MaxInFlight: a few writes in flight hide a round trip, and many
	// more would only hold more metrics outside the buffer's limit.
	MaxInFlightLimit = 64
)

// DefaultMaxBytes is the byte bound of a memory buffer of limit metrics that sets none:
// DefaultBytesPerMetric for each, and never less than DefaultBufferMaxBytes. Telegraf users
// raise metric_buffer_limit for long outages; a fixed bound would quietly cut such a buffer
// short, where this one is met only by metrics three times the size of a large one.
func DefaultMaxBytes(limit int) int64 {
	return max(DefaultBufferMaxBytes, int64(limit)*DefaultBytesPerMetric)
}

// withDefaults returns o with every zero value replaced by its default, some taken from out.
func (o Options) withDefaults(out morse.Output) Options {
	o.BatchSize = orDefault(o.BatchSize, DefaultBatchSize)
	o.FlushInterval = orDefault(o.FlushInterval, DefaultFlushInterval)
	o.BufferLimit = orDefault(o.BufferLimit, DefaultBufferLimit)
	o.BufferMaxBytes = orDefault(o.BufferMaxBytes, DefaultMaxBytes(o.BufferLimit))
	o.RetryInitial = orDefault(o.RetryInitial, DefaultRetryInitial)
	o.RetryMax = orDefault(o.RetryMax, DefaultRetryMax)
	if o.HighWater == 0 && o.LowWater == 0 {
		o.HighWater, o.LowWater = DefaultHighWater, DefaultLowWater
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 1
		if cw, ok := out.(morse.ConcurrentWriter); ok {
			o.MaxInFlight = min(max(cw.MaxConcurrentWrites(), 1), MaxInFlightLimit)
		}
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
		if wt, ok := out.(morse.WriteTimeouter); ok && wt.WriteTimeout() > 0 {
			o.WriteTimeout = wt.WriteTimeout()
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "output"
	}
	return o
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Validate reports every option that cannot work, each naming the option.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.BatchSize < 1 {
		bad("BatchSize %d: must be at least 1", o.BatchSize)
	}
	if o.FlushInterval <= 0 {
		bad("FlushInterval %s: must be positive", o.FlushInterval)
	}
	if o.FlushJitter < 0 || o.FlushJitter >= o.FlushInterval {
		bad("FlushJitter %s: must be at least 0 and less than FlushInterval %s", o.FlushJitter, o.FlushInterval)
	}
	if o.BufferLimit < 1 {
		bad("BufferLimit %d: must be at least 1", o.BufferLimit)
	}
	if o.BufferMaxBytes < 0 || o.BufferMaxAge < 0 {
		bad("BufferMaxBytes %d and BufferMaxAge %s: must not be negative", o.BufferMaxBytes, o.BufferMaxAge)
	}
	if o.MaxInFlight < 1 || o.MaxInFlight > MaxInFlightLimit {
		bad("MaxInFlight %d: must be between 1 and %d", o.MaxInFlight, MaxInFlightLimit)
	}
	if o.WriteTimeout < 0 {
		bad("WriteTimeout %s: must not be negative", o.WriteTimeout)
	}
	if o.RetryMaxAge < 0 || o.UnauthorizedRetryMaxAge < 0 {
		bad("RetryMaxAge %s and UnauthorizedRetryMaxAge %s: must not be negative", o.RetryMaxAge, o.UnauthorizedRetryMaxAge)
	}
	if o.LowWater < 0 || o.LowWater >= o.HighWater || o.HighWater > 1 {
		bad("HighWater %g and LowWater %g: need 0 <= low < high <= 1", o.HighWater, o.LowWater)
	}
	if o.RetryInitial <= 0 || o.RetryMax < o.RetryInitial {
		bad("RetryInitial %s and RetryMax %s: need 0 < initial <= max", o.RetryInitial, o.RetryMax)
	}
	return errors.Join(errs...)
}
