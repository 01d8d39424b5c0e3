package config

import (
	"path/filepath"
	"reflect"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// legacyFilterKeys are Telegraf's older filter key names and the keys they stand for.
var legacyFilterKeys = map[string]string{"fieldpass": "fieldinclude", "fielddrop": "fieldexclude"}

// InputCommon holds the options that every input accepts besides its own. It is the one
// place to set them, in a file or in code: the effective interval is computed from it
// (InputConfig.Interval).
type InputCommon struct {
	// Interval overrides [agent] interval for this input; zero inherits it.
	Interval morse.Duration `toml:"interval"`
	// Alias names this instance in logs and self-metrics, to tell two of a kind apart.
	Alias string `toml:"alias"`
	// CollectionOffset overrides [agent] collection_offset for this input; zero inherits it,
	// as in Telegraf.
	CollectionOffset morse.Duration `toml:"collection_offset"`
	// CollectionJitter, when set, replaces [agent] collection_jitter for this input; "0s"
	// turns the agent's jitter off for it, as in Telegraf.
	CollectionJitter *morse.Duration `toml:"collection_jitter"`
	// Precision, when set, replaces [agent] precision for this input: what it gathers is
	// rounded to it, and so is what a service input adds on its own, as in Telegraf. Any
	// positive duration.
	Precision morse.Duration `toml:"precision"`
	// TimeSource is which time the metrics of a gather carry: their own ("metric", the
	// default), the gather's start or its end.
	TimeSource TimeSource `toml:"time_source"`
	// StartupErrorBehavior is what happens when a service input fails to start.
	StartupErrorBehavior StartupErrorBehavior `toml:"startup_error_behavior"`
	// LogLevel replaces the agent's log level for this input's messages.
	LogLevel LogLevel `toml:"log_level"`
	// Rename holds name_override, name_prefix and name_suffix.
	Rename
	// Tags are added to every metric of this input: the [inputs.NAME.tags] table.
	Tags map[string]string `toml:"tags"`
	// Filter is read from the filter keys at the top of the plugin's table.
	Filter filter.Config `toml:"-"`
}

// OutputCommon holds the options that every output accepts besides its own. A zero value
// inherits the [agent] setting, as in Telegraf; flush_jitter is a pointer, like an input's
// collection_jitter, because "0s" must be able to turn the agent's jitter off for one
// output. It is the one place to set them, in a file or in code: the effective values are
// computed from it (OutputConfig.Settings).
type OutputCommon struct {
	// Alias names this instance in logs and self-metrics.
	Alias string `toml:"alias"`
	// FlushInterval overrides [agent] flush_interval.
	FlushInterval morse.Duration `toml:"flush_interval"`
	// FlushJitter, when set, replaces [agent] flush_jitter for this output; "0s" turns the
	// agent's jitter off for it.
	FlushJitter *morse.Duration `toml:"flush_jitter"`
	// MetricBatchSize overrides [agent] metric_batch_size.
	MetricBatchSize int `toml:"metric_batch_size"`
	// MetricBufferLimit overrides [agent] metric_buffer_limit.
	MetricBufferLimit int `toml:"metric_buffer_limit"`
	// BufferConfig overrides the [agent] buffer keys for this output.
	BufferConfig
	// DeadLetterFile, when set, is where the metrics the sink refused for good are kept, as
	// line protocol after a comment that says why; `morse replay` sends them again.
	DeadLetterFile string `toml:"dead_letter_file"`
	// DeadLetterMaxSize bounds the dead-letter file; past it the file is rotated once.
	DeadLetterMaxSize morse.Size `toml:"dead_letter_max_size"`
	// RetryMaxAge, when set, limits how long a batch is retried, from its first failure;
	// then it is dead-lettered under reason retry_expired. Zero retries forever, as by
	// default.
	RetryMaxAge morse.Duration `toml:"retry_max_age"`
	// UnauthorizedRetryMaxAge is RetryMaxAge for failures the sink refused as unauthorized
	// (401, 403), which an operator can fix while the data waits, counted from the first of
	// the batch's current run of them; zero: as RetryMaxAge.
	UnauthorizedRetryMaxAge morse.Duration `toml:"unauthorized_retry_max_age"`
	// Rename holds name_override, name_prefix and name_suffix: what this output writes is
	// renamed after its filter, and the other outputs see the names unchanged.
	Rename
	// StartupErrorBehavior is accepted for Telegraf's configs. An output always starts in
	// morse: it connects in the background and buffers meanwhile, whatever the value.
	StartupErrorBehavior StartupErrorBehavior `toml:"startup_error_behavior"`
	// LogLevel replaces the agent's log level for this output's messages.
	LogLevel LogLevel `toml:"log_level"`
	// Filter is read from the filter keys at the top of the plugin's table.
	Filter filter.Config `toml:"-"`
}

// ProcessorCommon holds the options that every processor accepts besides its own.
type ProcessorCommon struct {
	// Alias names this instance in logs and self-metrics.
	Alias string `toml:"alias"`
	// Order places the processor in the chain: lower first; equal orders keep the config's
	// order, as in Telegraf.
	Order int64 `toml:"order"`
	// LogLevel replaces the agent's log level for this processor's messages.
	LogLevel LogLevel `toml:"log_level"`
	// Filter selects the metrics the processor sees; the others pass it unchanged.
	Filter filter.Config `toml:"-"`
}

// AggregatorCommon holds the options that every aggregator accepts besides its own, with
// Telegraf's meanings and defaults (DefaultAggregatorCommon).
type AggregatorCommon struct {
	// Alias names this instance in logs and self-metrics.
	Alias string `toml:"alias"`
	// Period is the length of each aggregation window; windows align to multiples of it.
	Period morse.Duration `toml:"period"`
	// Delay is how long after a window ends its summary is pushed, for late arrivals.
	Delay morse.Duration `toml:"delay"`
	// Grace accepts metrics whose time is this much outside the window.
	Grace morse.Duration `toml:"grace"`
	// DropOriginal keeps the metrics the aggregator takes from reaching the outputs.
	DropOriginal bool `toml:"drop_original"`
	// Rename holds name_override, name_prefix and name_suffix, which change the summaries'
	// measurement name.
	Rename
	// LogLevel replaces the agent's log level for this aggregator's messages.
	LogLevel LogLevel `toml:"log_level"`
	// Tags are added to every summary.
	Tags map[string]string `toml:"tags"`
	// Filter selects the metrics the aggregator takes.
	Filter filter.Config `toml:"-"`
}

// DefaultAggregatorCommon returns Telegraf's defaults: a 30 s period pushed 100 ms after it
// ends, no grace.
func DefaultAggregatorCommon() AggregatorCommon {
	return AggregatorCommon{Period: morse.Duration(30 * time.Second), Delay: morse.Duration(100 * time.Millisecond)}
}

// OutputSettings are an output's effective flush and buffer settings, after inheriting what
// its table leaves out from [agent].
type OutputSettings struct {
	FlushInterval time.Duration // flush_interval
	FlushJitter   time.Duration // flush_jitter
	BatchSize     int           // metric_batch_size
	BufferLimit   int           // metric_buffer_limit
}

// decodeCommon takes the shared options out of the plugin's table and leaves the rest for
// Decode.
func (p *Plugin) decodeCommon() []problem {
	d := &decoder{}
	filterRest := map[string]any{}
	d.unknown = func(k string, v any) { filterRest[k] = v }
	var filter filter.Config
	d.table("", p.table, reflect.ValueOf(&filter).Elem())
	for old, key := range legacyFilterKeys {
		v, ok := filterRest[old]
		if !ok {
			continue
		}
		delete(filterRest, old)
		if _, both := p.table[key]; both {
			d.fail(old, "is the older name of %s: set only one of them", key)
			continue
		}
		target := &filter.FieldInclude
		if key == "fieldexclude" {
			target = &filter.FieldExclude
		}
		d.value(old, v, reflect.ValueOf(target).Elem())
	}

	p.rest = map[string]any{}
	d.unknown = func(k string, v any) { p.rest[k] = v }
	switch p.Kind {
	case KindInputs:
		d.table("", filterRest, reflect.ValueOf(&p.Input).Elem())
		p.Input.Filter = filter
	case KindOutputs:
		d.table("", filterRest, reflect.ValueOf(&p.Output).Elem())
		p.Output.Filter = filter
	case KindProcessors:
		d.table("", filterRest, reflect.ValueOf(&p.Processor).Elem())
		p.Processor.Filter = filter
	case KindAggregators:
		p.Aggregator = DefaultAggregatorCommon()
		d.table("", filterRest, reflect.ValueOf(&p.Aggregator).Elem())
		p.Aggregator.Filter = filter
	}
	return d.problems
}

func fromAgent(inherited bool) string {
	if inherited {
		return ", from [agent]"
	}
	return ""
}

// sharedDeadLetterFiles reports each output whose dead_letter_file another output before it
// already names. Each output rotates its file on its own, so with two writers on one path
// the second appends to a file the first has rotated away and then removes it, losing
// metrics that no counter knows of.
func sharedDeadLetterFiles(outputs []*Plugin) Errors {
	var errs Errors
	first := map[string]*Plugin{}
	for _, p := range outputs {
		path := p.Output.DeadLetterFile
		if path == "" {
			continue
		}
		key := DeadLetterKey(path)
		if q, ok := first[key]; ok {
			errs = append(errs, p.Errorf("dead_letter_file", "%q is already the dead_letter_file of %s (%s): "+
				"give each output a file of its own", path, q.ID(), q.Source()))
			continue
		}
		first[key] = p
	}
	return errs
}

// DeadLetterKey names a dead-letter file so that two spellings of one path, relative or
// absolute, compare equal.
func DeadLetterKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}
