package morse

import (
	"context"
	"log/slog"
	"time"

	"github.com/morse-agent/morse/selfstat"
)

// Accumulator receives the metrics that an input produces. It is safe for concurrent use and
// never blocks on an output: a slow output evicts from its own buffer instead.
type Accumulator interface {
	// AddMetric adds one metric. The accumulator applies the input's name options, tags and
	// filters, then the global tags, and hands the metric to every output.
	AddMetric(m Metric)
	// AddFields is the Telegraf-style shorthand. Without a time it uses the gather time.
	AddFields(name string, fields map[string]any, tags map[string]string, t ...time.Time)
	// AddError reports a problem that did not stop the gather. It is counted and logged,
	// throttled.
	AddError(err error)
}

// Input is a plugin that produces metrics when it is asked to, once per interval.
type Input interface {
	Gather(ctx context.Context, acc Accumulator) error
}

// ServiceInput is an input that produces metrics on its own, such as a network listener.
// Start must return once the service is running; the service then adds metrics until Stop.
// Gather is still called every interval and may do nothing.
type ServiceInput interface {
	Input
	Start(ctx context.Context, acc Accumulator) error
	Stop()
}

// Output is a plugin that writes batches of metrics to a sink.
//
// The engine calls its methods in this order:
//
//   - Init (Initializer), once, before anything else. A reload that keeps the instance,
//     or passes it again with other settings, does not call it again; one that adds it
//     back after an earlier reload removed and closed it does.
//   - Connect, before the first Write. When it fails, the engine buffers and calls it again
//     before each later attempt, backing off, until it succeeds; Write is never called on
//     an output whose Connect has not succeeded.
//   - Write, any number of times. A failed Write does not make the engine call Connect
//     again: an output whose connection broke reconnects within Write, or returns a
//     retryable error until it can.
//   - Close, once, after the last Write, when the agent stops or a reload removes the
//     output.
//
// A reload that passes the same instance again with other settings hands it from the old
// batch writer to a new one: the old one writes what it holds and calls Close, and only
// then does the new one call Connect again. So Connect must work after Close, and what is
// written after it must reach the sink. An instance is never used by two writers at once.
//
// Write returns nil when every metric was stored, a *PartialWriteError when the sink stored
// some and rejected the rest, an error that wraps a *PermanentError when the batch can never
// succeed, and any other error (optionally wrapping a *RetryableError) when it should be
// retried. Write is never called concurrently for one output, unless the output implements
// ConcurrentWriter.
type Output interface {
	Connect(ctx context.Context) error
	Write(ctx context.Context, batch []Metric) error
	Close() error
}

// ConcurrentWriter is implemented by outputs whose Write is safe for concurrent use. The
// agent then lets up to MaxConcurrentWrites batches be in flight while a backlog remains, so
// that a sink's round trip does not cap the output at one batch per round trip. Batches may
// then arrive out of order, which time-series databases do not mind.
type ConcurrentWriter interface {
	MaxConcurrentWrites() int
}

// Validator is implemented by plugin configs that can check themselves after decoding.
// Returned errors should wrap a *FieldError to name the key at fault.
type Validator interface {
	Validate() error
}

// Initializer is implemented by plugins that need work after their config is decoded and
// validated and before they run, such as opening files or taking a first sample.
type Initializer interface {
	Init() error
}

// LoggerSetter is implemented by plugins that log. The engine gives each plugin a logger that
// already names the plugin.
type LoggerSetter interface {
	SetLogger(l *slog.Logger)
}

// StatsSetter is implemented by plugins that report self-metrics beyond the standard ones,
// such as a listener's parse errors.
type StatsSetter interface {
	SetStats(s *selfstat.PluginStats)
}

// SelfStatsSetter is implemented by plugins that report the agent's own counters, as
// inputs.internal does. The engine hands them the registry that holds every counter.
type SelfStatsSetter interface {
	SetSelfStats(r *selfstat.Registry)
}

// PrecisionSetter is implemented by outputs that round timestamps to the agent's precision
// ([agent] precision), such as InfluxDB's, which then ask the server for that precision.
type PrecisionSetter interface {
	SetPrecision(d time.Duration)
}

// WriteTimeouter is implemented by outputs that bound each write by an option of their own,
// such as InfluxDB's timeout. The engine cancels a write attempt that runs past it and
// retries the batch, so that a hung sink never stalls the output longer than that.
type WriteTimeouter interface {
	WriteTimeout() time.Duration
}

// Processor changes, drops or adds metrics on their way from the inputs to the outputs, as
// Telegraf's processors do. The agent calls Apply from the goroutine of the input that added
// the metrics, so it must be safe for concurrent use and must never block on I/O: a slow
// processor would slow the input down.
type Processor interface {
	// Apply processes in and returns what to pass on, in order. It may reuse in's backing
	// array for the result. Metrics are values: a processor changes one by building a new
	// one (WithTag, WithField, ...), never by writing to the slices it shares.
	Apply(in []Metric) []Metric
}

// Aggregator summarises the metrics of each period, as Telegraf's aggregators do. The agent
// calls Add for every metric the aggregator's filter passes, then, once per period, Push
// and Reset, never concurrently with each other.
type Aggregator interface {
	// Add takes one metric into the current period.
	Add(m Metric)
	// Push adds the period's summary metrics to acc.
	Push(acc Accumulator)
	// Reset starts a new period.
	Reset()
}

// CoarseClockSetter is implemented by processors that read the time for every call but
// need it only to within a fraction of a second, such as processors.cardinality for its
// sliding window. Before the first Apply the agent calls SetCoarseClock with a clock that
// one goroutine of the agent's sets every resolution while the agent runs (it reads the
// system clock otherwise), so that a reading costs a memory load instead of a clock read.
type CoarseClockSetter interface {
	SetCoarseClock(now func() time.Time, resolution time.Duration)
}

// TagLimitReporter is implemented by outputs that can tell a cardinality guard (a processor
// such as processors.cardinality) that the sink refused a point because one of its tag keys
// has too many values, as InfluxDB's max-values-per-tag does. TagLimitGuard returns the alias
// of the processor that the output's options name, "" for none. The engine finds that
// processor and calls SetTagLimitGuard with a function that makes it act on the key from the
// next metric on, so that the key's next points are changed before the sink refuses them too.
// The engine lives above both plugins, so neither needs to import the other.
type TagLimitReporter interface {
	TagLimitGuard() string
	SetTagLimitGuard(trip func(measurement, key string))
}

// StartConnector is implemented by outputs that serve rather than send, such as
// outputs.health, whose Connect opens the socket that clients ask. Other outputs connect
// on their first write, so that a sink that is down at start delays nothing; one that
// serves must be up from the start, metrics or not. When ConnectsAtStart reports true, the
// batch writer calls Connect as soon as it may use the output, and again at the retry
// pace until it succeeds, before its first flush.
type StartConnector interface {
	ConnectsAtStart() bool
}

// EngineWatcher is implemented by plugins that report on the agent that runs them, as
// outputs.health does. Before Init the agent calls WatchEngine with a value whose methods
// say what it knows (its Stuck, Failing and Filling, with standard types only); the plugin
// reads it through a small interface of its own, so that the contract names no engine type
// and no plugin imports the engine. A plugin built outside an agent is never called.
type EngineWatcher interface {
	WatchEngine(engine any)
}
