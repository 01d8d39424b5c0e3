package config

import (
	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// ProcessorConfig is one configured processor.
type ProcessorConfig struct {
	Name   string          // the NAME of [[processors.NAME]]
	Common ProcessorCommon // the options every processor has
	// Plugin processes what the inputs gather; AfterAggregators, a second instance decoded
	// from the same table, processes the aggregators' summaries, so that a processor with
	// state keeps the two streams apart, as Telegraf does. A processor added in code serves
	// both.
	Plugin           morse.Processor
	AfterAggregators morse.Processor
	// Filter is compiled from Common.Filter by Load and Resolve; a program may set it
	// instead, with Common.Filter left empty. nil passes everything.
	Filter *filter.Filter
	Source string // "file:line" of the table's header, or "code", for logs

	compiledFilter // set by Config.Resolve
}

// AggregatorConfig is one configured aggregator.
type AggregatorConfig struct {
	Name   string           // the NAME of [[aggregators.NAME]]
	Common AggregatorCommon // the options every aggregator has
	Plugin morse.Aggregator
	// Filter is compiled from Common.Filter by Load and Resolve; a program may set it
	// instead, with Common.Filter left empty. nil passes everything.
	Filter *filter.Filter
	Source string // "file:line" of the table's header, or "code", for logs

	compiledFilter // set by Config.Resolve
}

// AddProcessor appends a processor, which then runs both on what the inputs gather and on
// the aggregators' summaries, and returns it for further changes to its Common options,
// which Config.Resolve checks as a file's.
func (c *Config) AddProcessor(name string, p morse.Processor) *ProcessorConfig {
	pc := &ProcessorConfig{Name: name, Plugin: p, AfterAggregators: p, Source: "code"}
	c.Processors = append(c.Processors, pc)
	return pc
}

// AddAggregator appends an aggregator with Telegraf's default window (a 30 s period pushed
// 100 ms after it ends) and returns it for further changes to its Common options, which
// Config.Resolve checks as a file's (a period that is not positive is refused).
func (c *Config) AddAggregator(name string, a morse.Aggregator) *AggregatorConfig {
	ac := &AggregatorConfig{Name: name, Plugin: a, Common: DefaultAggregatorCommon(), Source: "code"}
	c.Aggregators = append(c.Aggregators, ac)
	return ac
}

func buildProcessor(reg *morse.Registry, p *Plugin) (*ProcessorConfig, Errors) {
	info, ok := reg.Processor(p.Name)
	if !ok {
		return nil, Errors{p.Errorf("", "unknown processor plugin")}
	}
	plugin, after := info.New(), info.New()
	errs := preparePlugin(p, plugin)
	if len(errs) == 0 {
		errs = preparePlugin(p, after) // the same table decodes the same way
	}
	f, ferrs := buildFilter(p, p.Processor.Filter)
	errs = append(errs, ferrs...)
	return &ProcessorConfig{Name: p.Name, Common: p.Processor, Plugin: plugin, AfterAggregators: after,
		Filter: f, Source: p.Source(), compiledFilter: compiledFilter{compiled: f, from: p.Processor.Filter}}, errs
}

func buildAggregator(reg *morse.Registry, p *Plugin) (*AggregatorConfig, Errors) {
	info, ok := reg.Aggregator(p.Name)
	if !ok {
		return nil, Errors{p.Errorf("", "unknown aggregator plugin")}
	}
	plugin := info.New()
	errs := preparePlugin(p, plugin)
	f, ferrs := buildFilter(p, p.Aggregator.Filter)
	errs = append(errs, ferrs...)
	return &AggregatorConfig{Name: p.Name, Common: p.Aggregator, Plugin: plugin, Filter: f, Source: p.Source(),
		compiledFilter: compiledFilter{compiled: f, from: p.Aggregator.Filter}}, errs
}
