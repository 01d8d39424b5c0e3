package config

import (
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
	Name   string      // the NAME of [[inputs.NAME]]
	Common InputCommon // the options every input has: the one place to set them
	Plugin morse.Input // the plugin, decoded and validated but not yet initialised
	// Filter is compiled from Common.Filter by Load and Resolve; a program may set it
	// instead, with Common.Filter left empty. nil passes everything.
	Filter *filter.Filter
	Source string // "file:line" of the table's header, or "code", for logs
	// Fingerprint is set by Load: equal for equal tables with an equal effective interval.
	// A config built in code leaves it empty; the plugin instance then says which input it
	// is (see Identity).
	Fingerprint string

	resolved // set by Config.Resolve
}

// OutputConfig is one configured output.
type OutputConfig struct {
	Name   string       // the NAME of [[outputs.NAME]]
	Common OutputCommon // the options every output has: the one place to set them
	Plugin morse.Output // the plugin, decoded and validated but not yet connected
	// Filter is compiled from Common.Filter by Load and Resolve; a program may set it
	// instead, with Common.Filter left empty. nil passes everything.
	Filter *filter.Filter
	Source string // "file:line" of the table's header, or "code", for logs
	// Fingerprint is set by Load: equal when the table's content after substitution and
	// the effective settings are equal. Settings inherited from [agent] are part of it,
	// because an output running with stale settings would be a silent surprise. A config
	// built in code leaves it empty; the plugin instance then says which output it is (see
	// Identity).
	Fingerprint string

	resolved // set by Config.Resolve
	settings OutputSettings
}

// Interval is the input's effective gather interval: Common.Interval, or [agent] interval
// when that is zero. Config.Resolve computes it; it is zero before.
func (ic *InputConfig) Interval() time.Duration { return ic.interval }

// Settings are the output's effective flush and buffer settings: each Common option, or
// the [agent] one that it leaves unset. Config.Resolve computes them; they are zero before.
func (oc *OutputConfig) Settings() OutputSettings { return oc.settings }

// DefaultConfig returns a config with the [agent] defaults and no plugin, for building an
// agent in code with AddInput and AddOutput.
func DefaultConfig() *Config {
	return &Config{GlobalTags: map[string]string{}, Agent: DefaultAgentConfig()}
}

// AddInput appends an input and returns it for further changes to its Common options.
// Options it leaves unset inherit from c.Agent when the agent starts, so c.Agent may be set
// before or after.
func (c *Config) AddInput(name string, in morse.Input) *InputConfig {
	ic := &InputConfig{Name: name, Plugin: in, Source: "code"}
	c.Inputs = append(c.Inputs, ic)
	return ic
}

// AddOutput appends an output and returns it for further changes to its Common options.
// Options it leaves unset inherit from c.Agent when the agent starts, so c.Agent may be set
// before or after.
func (c *Config) AddOutput(name string, out morse.Output) *OutputConfig {
	oc := &OutputConfig{Name: name, Plugin: out, Source: "code"}
	c.Outputs = append(c.Outputs, oc)
	return oc
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
	if err := cfg.Resolve(); err != nil {
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
		Fingerprint: combineFingerprint(p.Fingerprint, p.Interval),
		resolved:    resolved{compiledFilter: compiledFilter{compiled: filter, from: p.Input.Filter}},
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
		Fingerprint: combineFingerprint(p.Fingerprint, s.FlushInterval, s.FlushJitter, s.BatchSize, s.BufferLimit),
		resolved:    resolved{compiledFilter: compiledFilter{compiled: filter, from: p.Output.Filter}},
	}, errs
}

// preparePlugin decodes the plugin's own keys and, when every key it takes decoded cleanly,
// lets the plugin validate itself. Validating a half-decoded plugin would only repeat the
// decoding problems in other words, such as "url is required" after "url: expected a
// string"; an unknown key leaves nothing half-decoded, so its plugin's own problems (an
// unknown data_format beside a misspelt option) are reported in the same run.
func preparePlugin(p *Plugin, plugin any) Errors {
	errs, whole := p.decode(plugin)
	if !whole {
		return errs
	}
	if v, ok := plugin.(morse.Validator); ok {
		errs = append(errs, placeErrors(p, v.Validate())...)
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
