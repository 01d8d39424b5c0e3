package morse

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/morse-agent/morse/internal/config"
)

// AgentConfig is the [agent] table. DefaultAgentConfig gives Telegraf's defaults.
type AgentConfig = config.AgentConfig

// Precision is the unit that gathered timestamps are rounded to; zero means nanoseconds.
type Precision = config.Precision

// InputCommon holds the options that every input accepts besides its own: interval, alias,
// name_override, name_prefix, name_suffix, the tags table and the filters.
type InputCommon = config.InputCommon

// OutputCommon holds the options that every output accepts besides its own: alias,
// flush_interval, flush_jitter, metric_batch_size, metric_buffer_limit and the filters.
type OutputCommon = config.OutputCommon

// ConfigSource is config text held in memory, such as an embedded default config.
type ConfigSource = config.Source

// ConfigError is one config problem, formatted as file:line: key: problem.
type ConfigError = config.Error

// ConfigErrors is every problem of one load. LoadConfig's error is of this type unless a
// source could not be read at all.
type ConfigErrors = config.Errors

// DefaultAgentConfig returns Telegraf's [agent] defaults.
func DefaultAgentConfig() AgentConfig { return config.DefaultAgentConfig() }

// Config is a loaded, checked configuration: everything an Agent needs to run.
type Config struct {
	GlobalTags map[string]string // added to every metric, after the input's own tags
	Agent      AgentConfig       // the merged [agent] table
	Inputs     []*InputConfig    // in the order the config lists them
	Outputs    []*OutputConfig   // in the order the config lists them
}

// InputConfig is one configured input.
type InputConfig struct {
	Name   string      // the NAME of [[inputs.NAME]]
	Common InputCommon // the options every input has
	Plugin Input       // the plugin, decoded and validated but not yet initialised
	Filter *Filter     // nil when the input has no filter
	Source string      // "file:line" of the table's header, for logs
	// Interval is the effective gather interval: Common.Interval or [agent] interval.
	Interval time.Duration
	// Fingerprint is equal for equal tables with an equal effective interval.
	Fingerprint string
}

// OutputConfig is one configured output with its effective flush and buffer settings.
type OutputConfig struct {
	Name   string       // the NAME of [[outputs.NAME]]
	Common OutputCommon // the options every output has, as written
	Plugin Output       // the plugin, decoded and validated but not yet connected
	Filter *Filter      // nil when the output has no filter
	Source string       // "file:line" of the table's header, for logs
	// Fingerprint is equal when the table's content after substitution and the effective
	// settings below are equal. A reload keeps the running output, with its buffer, when its
	// fingerprint did not change. Settings inherited from [agent] are part of it, because an
	// output running with stale settings would be a silent surprise.
	Fingerprint string

	FlushInterval time.Duration // effective flush_interval
	FlushJitter   time.Duration // effective flush_jitter
	BatchSize     int           // effective metric_batch_size
	BufferLimit   int           // effective metric_buffer_limit
}

// LoadOptions says where LoadConfig reads the config from and which plugins it knows.
type LoadOptions struct {
	// Files are config files, read in order; later files win where settings conflict.
	Files []string
	// Dirs are config directories whose *.conf files are read in name order, after Files.
	Dirs []string
	// Sources are config texts held in memory, read before Files.
	Sources []ConfigSource
	// Registry knows the plugins; nil means DefaultRegistry().
	Registry *Registry
	// InputFilter and OutputFilter, when not empty, keep only the plugins of these names, as
	// Telegraf's --input-filter and --output-filter do. Other plugins are not even checked.
	InputFilter, OutputFilter []string
	// LookupEnv finds environment variables for ${VAR} substitution; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// DefaultConfig returns a config with the [agent] defaults and no plugin, for building an
// agent in code with AddInput and AddOutput.
func DefaultConfig() *Config {
	return &Config{GlobalTags: map[string]string{}, Agent: DefaultAgentConfig()}
}

// AddInput appends an input that inherits every setting from c.Agent, which should therefore
// be set first, and returns it for further changes.
func (c *Config) AddInput(name string, in Input) *InputConfig {
	ic := &InputConfig{Name: name, Plugin: in, Source: "code", Interval: time.Duration(c.Agent.Interval)}
	c.Inputs = append(c.Inputs, ic)
	return ic
}

// AddOutput appends an output that inherits every setting from c.Agent, which should
// therefore be set first, and returns it for further changes.
func (c *Config) AddOutput(name string, out Output) *OutputConfig {
	oc := &OutputConfig{
		Name: name, Plugin: out, Source: "code",
		FlushInterval: time.Duration(c.Agent.FlushInterval), FlushJitter: time.Duration(c.Agent.FlushJitter),
		BatchSize: c.Agent.MetricBatchSize, BufferLimit: c.Agent.MetricBufferLimit,
	}
	c.Outputs = append(c.Outputs, oc)
	return oc
}

// LoadConfig reads, checks and builds the config: every plugin is looked up in the registry,
// created, decoded, validated and given its filter. It reports every problem of every file and
// plugin at once, as a ConfigErrors, and then returns no Config: a config with any problem is
// refused as a whole, so that a reload never runs half of one.
func LoadConfig(opts LoadOptions) (*Config, error) {
	reg := opts.Registry
	if reg == nil {
		reg = DefaultRegistry()
	}
	f, err := config.Load(config.Options{
		Files: opts.Files, Dirs: opts.Dirs, Sources: opts.Sources, LookupEnv: opts.LookupEnv,
		InputFilter: opts.InputFilter, OutputFilter: opts.OutputFilter,
	})
	var errs config.Errors
	if err != nil && !errors.As(err, &errs) {
		return nil, err
	}
	cfg := &Config{GlobalTags: maps.Clone(f.GlobalTags), Agent: f.Agent}
	for _, p := range f.Inputs {
		ic, perrs := buildInput(reg, p)
		errs = append(errs, perrs...)
		if ic != nil {
			cfg.Inputs = append(cfg.Inputs, ic)
		}
	}
	for _, p := range f.Outputs {
		oc, perrs := buildOutput(reg, p)
		errs = append(errs, perrs...)
		if oc != nil {
			cfg.Outputs = append(cfg.Outputs, oc)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func buildInput(reg *Registry, p *config.Plugin) (*InputConfig, config.Errors) {
	info, ok := reg.Input(p.Name)
	if !ok {
		return nil, config.Errors{p.Errorf("", "unknown input plugin")}
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

func buildOutput(reg *Registry, p *config.Plugin) (*OutputConfig, config.Errors) {
	info, ok := reg.Output(p.Name)
	if !ok {
		return nil, config.Errors{p.Errorf("", "unknown output plugin")}
	}
	plugin := info.New()
	errs := preparePlugin(p, plugin)
	filter, ferrs := buildFilter(p, p.Output.Filter)
	errs = append(errs, ferrs...)
	s := p.Settings
	return &OutputConfig{
		Name: p.Name, Common: p.Output, Plugin: plugin, Filter: filter, Source: p.Source(),
		Fingerprint:   combineFingerprint(p.Fingerprint, s.FlushInterval, s.FlushJitter, s.BatchSize, s.BufferLimit),
		FlushInterval: s.FlushInterval, FlushJitter: s.FlushJitter,
		BatchSize: s.BatchSize, BufferLimit: s.BufferLimit,
	}, errs
}

// preparePlugin decodes the plugin's own keys and, when they decoded cleanly, lets the plugin
// validate itself. Validating a half-decoded plugin would only repeat the decoding problems in
// other words, such as "url is required" after "url: expected a string".
func preparePlugin(p *config.Plugin, plugin any) config.Errors {
	errs := p.Decode(plugin)
	if len(errs) > 0 {
		return errs
	}
	if v, ok := plugin.(Validator); ok {
		errs = placeErrors(p, v.Validate())
	}
	return errs
}

// buildFilter compiles a plugin's filter; an empty filter gives nil, which passes everything
// at no cost.
func buildFilter(p *config.Plugin, c FilterConfig) (*Filter, config.Errors) {
	if c.IsEmpty() {
		return nil, nil
	}
	f, err := NewFilter(c)
	return f, placeErrors(p, err)
}

// placeErrors turns an error from a plugin into config problems: each *FieldError, also
// inside errors.Join, goes to its key's line, anything else to the header's line.
func placeErrors(p *config.Plugin, err error) config.Errors {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var errs config.Errors
		for _, e := range joined.Unwrap() {
			errs = append(errs, placeErrors(p, e)...)
		}
		return errs
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return config.Errors{p.Errorf(fe.Key, "%v", fe.Err)}
	}
	return config.Errors{p.Errorf("", "%v", err)}
}

// combineFingerprint hashes a table's fingerprint with the effective settings that the table
// inherits, so that a change in [agent] changes the plugin's fingerprint too.
func combineFingerprint(table string, settings ...any) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s%v", table, settings))
	return hex.EncodeToString(sum[:])
}
