package influx

import (
	"errors"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// Options are Telegraf's options of the influx data format, as the inputs that take
// data_format embed them (plugins/parsers/dataformat).
type Options struct {
	// InfluxTimestampPrecision (influx_timestamp_precision) is the unit of the timestamps
	// in the input: "1ns" (the default, also when unset), "1us", "1ms" or "1s".
	InfluxTimestampPrecision Precision `toml:"influx_timestamp_precision"`
	// InfluxParserType (influx_parser_type) is Telegraf's choice between its two parsers,
	// "internal" and "upstream"; morse has one parser, which refuses what both refuse, so
	// either is accepted and means the same.
	InfluxParserType string `toml:"influx_parser_type"`
}

// Precision is a timestamp unit written as Telegraf writes it, a duration ("1ms"), or as
// InfluxDB's precision parameter ("ms"), which morse's kafka_consumer took before it.
type Precision time.Duration

// UnmarshalTOML reads a duration or one of InfluxDB's unit names.
func (p *Precision) UnmarshalTOML(v any) error {
	if s, ok := v.(string); ok {
		if d, err := ParsePrecision(s); err == nil && s != "" {
			*p = Precision(d)
			return nil
		}
	}
	var d morse.Duration
	if err := d.UnmarshalTOML(v); err != nil {
		return err
	}
	*p = Precision(d)
	return nil
}

// String formats the precision as a duration.
func (p Precision) String() string { return time.Duration(p).String() }

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	var errs []error
	switch time.Duration(o.InfluxTimestampPrecision) {
	case 0, time.Nanosecond, time.Microsecond, time.Millisecond, time.Second:
	default:
		errs = append(errs, morse.Errorf("influx_timestamp_precision",
			"%s is not supported: use \"1ns\", \"1us\", \"1ms\" or \"1s\"", o.InfluxTimestampPrecision))
	}
	switch o.InfluxParserType {
	case "", "internal", "upstream":
	default:
		errs = append(errs, morse.Errorf("influx_parser_type", "must be \"internal\" or \"upstream\", got %q", o.InfluxParserType))
	}
	return errors.Join(errs...)
}

// New builds a line protocol parser from Telegraf's options. Inputs that use its Result
// or LineMetrics keep it as it is; Entries puts it under the parsers.Parser contract.
func New(o Options, s parsers.Settings) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Parser{Precision: time.Duration(o.InfluxTimestampPrecision), Now: s.Now}, nil
}

// Entries is a Parser under the parsers.Parser contract: Parse returns a *parsers.Error
// with each refused entry's line instead of a Result. The Parser stays reachable, so that
// an input can still set LineMetrics.
type Entries struct {
	*Parser
}

// Parse parses every entry of data, calls emit for each metric and returns nil or a
// *parsers.Error holding the refused entries.
func (e Entries) Parse(data []byte, emit func(morse.Metric)) error {
	return EntryErrors(e.Parser.Parse(data, emit))
}

// EntryErrors turns a Result into the contract's error: nil when no entry was refused.
func EntryErrors(r Result) error {
	if r.Errors == 0 {
		return nil
	}
	out := &parsers.Error{Refused: r.Errors, Entries: make([]parsers.EntryError, 0, len(r.Errs))}
	for _, le := range r.Errs {
		out.Entries = append(out.Entries, parsers.EntryError{Line: le.Line, Text: le.Text, Err: le.Err})
	}
	return out
}

var _ parsers.Parser = Entries{}
