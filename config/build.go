package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// Config is a loaded, checked configuration: everything an Agent needs to run.
type Config struct {
	GlobalTags  map[string]string   // added to every metric, after the input's own tags
	Agent       AgentConfig         // the merged [agent] table
	Inputs      []*InputConfig      // in the order the config lists them
	Outputs     []*OutputConfig     // in the order the config lists them
	Processors  []*ProcessorConfig  // in the order the config lists them; Order sorts them
	Aggregators []*AggregatorConfig // in the order the config lists them
}

// InputConfig is one configured input.
type InputConfig struct {
	Name   string         // the NAME of [[inputs.NAME]]
	Common InputCommon    // the options every input has
	Plugin morse.Input    // the plugin, decoded and validated but not yet initialised
	Filter *filter.Filter // nil when the input has no filter
	Source string         // "file:line" of the table's header, for logs
	// Interval is the effective gather interval: Common.Interval or [agent] interval. Zero
	// inherits [agent] interval when the agent starts (see Config.Inherit).
	Interval time.Duration
	// Fingerprint is equal for equal tables with an equal effective interval.
	Fingerprint string
}

// OutputConfig is one configured output with its effective flush and buffer settings.
type OutputConfig struct {
	Name   string         // the NAME of [[outputs.NAME]]
	Common OutputCommon   // the options every output has, as written
	Plugin morse.Output   // the plugin, decoded and validated but not yet connected
	Filter *filter.Filter // nil when the output has no filter
	Source string         // "file:line" of the table's header, for logs
	// Fingerprint is equal when the table's content after substitution and the effective
	// settings below are equal. A reload keeps the running output, with its buffer, when its
	// fingerprint did not change. Settings inherited from [agent] are part of it, because an
	// output running with stale settings would be a silent surprise.
	Fingerprint string

	// The effective flush and buffer settings. A zero value inherits the [agent] setting
	// when the agent starts (see Config.Inherit); so does a zero FlushJitter unless
	// FlushJitterSet says that zero was meant.
	FlushInterval  time.Duration // flush_interval
	FlushJitter    time.Duration // flush_jitter
	FlushJitterSet bool          // FlushJitter applies even when it is zero
	BatchSize      int           // metric_batch_size
	BufferLimit    int           // metric_buffer_limit
}

// DefaultConfig returns a config with the [agent] defaults and no plugin, for building an
// agent in code with AddInput and AddOutput.
func DefaultConfig() *Config {
	return &Config{GlobalTags: map[string]string{}, Agent: DefaultAgentConfig()}
}

// AddInput appends an input and returns it for further changes. Settings it leaves at zero
// inherit from c.Agent when the agent starts, so c.Agent may be set before or after.
func (c *Config) AddInput(name string, in morse.Input) *InputConfig {
	ic := &InputConfig{Name: name, Plugin: in, Source: "code"}
	c.Inputs = append(c.Inputs, ic)
	return ic
}

// AddOutput appends an output and returns it for further changes. Settings it leaves at zero
// inherit from c.Agent when the agent starts, so c.Agent may be set before or after.
func (c *Config) AddOutput(name string, out morse.Output) *OutputConfig {
	oc := &OutputConfig{Name: name, Plugin: out, Source: "code"}
	c.Outputs = append(c.Outputs, oc)
	return oc
}

// Inherit fills in every setting that an input or output leaves to [agent], then checks the
// rules between them. The agent calls it when it starts and on every reload, so a program
// that builds a config in code may set c.Agent at any point before that. A config from Load
// has every setting filled in already.
func (c *Config) Inherit() error {
	a := c.Agent
	var errs []error
	for _, ic := range c.Inputs {
		if ic.Interval == 0 {
			ic.Interval = time.Duration(a.Interval)
		}
		jitter := time.Duration(a.CollectionJitter)
		if j := ic.Common.CollectionJitter; j != nil {
			jitter = time.Duration(*j) // the input's own replaces [agent]'s, "0s" included
		}
		if jitter < 0 || ic.Interval <= jitter {
			errs = append(errs, fmt.Errorf("inputs.%s (%s): collection_jitter %s must be at least 0 and smaller than interval %s",
				ic.Name, ic.Source, jitter, ic.Interval))
		}
	}
	for _, oc := range c.Outputs {
		oc.FlushInterval = cmp.Or(oc.FlushInterval, time.Duration(a.FlushInterval))
		if !oc.FlushJitterSet && oc.FlushJitter == 0 {
			oc.FlushJitter = time.Duration(a.FlushJitter)
		}
		oc.BatchSize = cmp.Or(oc.BatchSize, a.MetricBatchSize)
		oc.BufferLimit = cmp.Or(oc.BufferLimit, a.MetricBufferLimit)
		if oc.FlushJitter < 0 || oc.FlushJitter >= oc.FlushInterval {
			errs = append(errs, fmt.Errorf("outputs.%s (%s): flush_jitter %s must be at least 0 and smaller than flush_interval %s",
				oc.Name, oc.Source, oc.FlushJitter, oc.FlushInterval))
		}
		if oc.BatchSize < 1 || oc.BufferLimit < oc.BatchSize {
			errs = append(errs, fmt.Errorf("outputs.%s (%s): metric_buffer_limit %d must be at least metric_batch_size %d, which must be positive",
				oc.Name, oc.Source, oc.BufferLimit, oc.BatchSize))
		}
	}
	return errors.Join(errs...)
}

// Load reads, checks and builds the config: every plugin is looked up in the registry,
// created, decoded, validated and given its filter. It reports every problem of every file and
// plugin at once, as Errors, and then returns no Config: a config with any problem is
// refused as a whole, so that a reload never runs half of one.
func Load(opts Options) (*Config, error) {
	reg := opts.Registry
	if reg == nil {
		reg = morse.DefaultRegistry()
	}
	f, err := Read(opts)
	var errs Errors
	if err != nil && !errors.As(err, &errs) {
		return nil, err
	}
	cfg := &Config{GlobalTags: maps.Clone(f.GlobalTags), Agent: f.Agent}
	cfg.Inputs = buildAll(reg, f.Inputs, buildInput, &errs)
	cfg.Outputs = buildAll(reg, f.Outputs, buildOutput, &errs)
	cfg.Processors = buildAll(reg, f.Processors, buildProcessor, &errs)
	cfg.Aggregators = buildAll(reg, f.Aggregators, buildAggregator, &errs)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// buildAll builds every plugin of one kind, in order, adding their problems to errs. A
// plugin the registry does not know is left out.
func buildAll[C any](reg *morse.Registry, plugins []*Plugin, build func(*morse.Registry, *Plugin) (*C, Errors), errs *Errors) []*C {
	var out []*C
	for _, p := range plugins {
		c, perrs := build(reg, p)
		*errs = append(*errs, perrs...)
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

func buildInput(reg *morse.Registry, p *Plugin) (*InputConfig, Errors) {
	info, ok := reg.Input(p.Name)
	if !ok {
		return nil, Errors{p.Errorf("", "unknown input plugin")}
	}
	plugin := info.New()
	errs := preparePlugin(p, plugin)
	filter, ferrs := buildFilter(p, p.Input.Filter)
	errs = append(errs, ferrs...)
	return &InputConfig{
		Name: p.Name, Common: p.Input, Plugin: plugin, Filter: filter, Source: p.Source(),
		Interval:    p.Interval,
		Fingerprint: combineFingerprint(p.Fingerprint, p.Interval),
	}, errs
}

func buildOutput(reg *morse.Registry, p *Plugin) (*OutputConfig, Errors) {
	info, ok := reg.Output(p.Name)
	if !ok {
		return nil, Errors{p.Errorf("", "unknown output plugin")}
	}
	plugin := info.New()
	errs := preparePlugin(p, plugin)
	filter, ferrs := buildFilter(p, p.Output.Filter)
	errs = append(errs, ferrs...)
	s := p.Settings
	return &OutputConfig{
		Name: p.Name, Common: p.Output, Plugin: plugin, Filter: filter, Source: p.Source(),
		Fingerprint:   combineFingerprint(p.Fingerprint, s.FlushInterval, s.FlushJitter, s.BatchSize, s.BufferLimit),
		FlushInterval: s.FlushInterval, FlushJitter: s.FlushJitter, FlushJitterSet: true,
		BatchSize: s.BatchSize, BufferLimit: s.BufferLimit,
	}, errs
}

// preparePlugin decodes the plugin's own keys and, when they decoded cleanly, lets the plugin
// validate itself. Validating a half-decoded plugin would only repeat the decoding problems in
// other words, such as "url is required" after "url: expected a string".
func preparePlugin(p *Plugin, plugin any) Errors {
	errs := p.Decode(plugin)
	if len(errs) > 0 {
		return errs
	}
	if v, ok := plugin.(morse.Validator); ok {
		errs = placeErrors(p, v.Validate())
	}
	return errs
}

// buildFilter compiles a plugin's filter; an empty filter gives nil, which passes everything
// at no cost.
func buildFilter(p *Plugin, c filter.Config) (*filter.Filter, Errors) {
	if c.IsEmpty() {
		return nil, nil
	}
	f, err := filter.New(c)
	return f, placeErrors(p, err)
}

// placeErrors turns an error from a plugin into config problems: each *FieldError, also
// inside errors.Join, goes to its key's line, anything else to the header's line.
func placeErrors(p *Plugin, err error) Errors {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var errs Errors
		for _, e := range joined.Unwrap() {
			errs = append(errs, placeErrors(p, e)...)
		}
		return errs
	}
	var fe *morse.FieldError
	if errors.As(err, &fe) {
		return Errors{p.Errorf(fe.Key, "%v", fe.Err)}
	}
	return Errors{p.Errorf("", "%v", err)}
}

// combineFingerprint hashes a table's fingerprint with the effective settings that the table
// inherits, so that a change in [agent] changes the plugin's fingerprint too.
func combineFingerprint(table string, settings ...any) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s%v", table, settings))
	return hex.EncodeToString(sum[:])
}
