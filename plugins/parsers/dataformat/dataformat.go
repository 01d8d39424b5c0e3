// Package dataformat is the one place where an input's data_format becomes a parser. Inputs
// that take Telegraf's data_format embed Config (as an anonymous field, so that its keys are
// the input's own), call its Validate from theirs and build their parser with NewParser.
//
// Config embeds each format's Options, so every format's keys are known keys of every such
// input: a config that names an unknown format and misspells an option is told both in one
// run. An option of a format other than the chosen one is refused, as Telegraf refuses a key
// that the chosen parser does not use.
package dataformat

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/csv"
	"github.com/morse-agent/morse/plugins/parsers/graphite"
	"github.com/morse-agent/morse/plugins/parsers/grok"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/parsers/json"
	"github.com/morse-agent/morse/plugins/parsers/json_v2"
	"github.com/morse-agent/morse/plugins/parsers/logfmt"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
	"github.com/morse-agent/morse/plugins/parsers/value"
)

// Default is the data_format of an input that sets none, as in Telegraf.
const Default = "influx"

// Config is data_format and the options of every format, with Telegraf's keys. Each format's
// Options are embedded, so their keys sit beside data_format in the input's table.
type Config struct {
	// DataFormat (data_format) names the format; empty means the input's default, which
	// its New sets, and Default where it sets none.
	DataFormat string `toml:"data_format"`

	Influx
	Value
	Logfmt
	CSV
	Grok
	JSON
	JSONV2
	SerializedJSON
	Prometheus
	Graphite
}

// The Options of each format under a name of its own: every format's type is called
// Options, and Go embeds a type under its name, so Config embeds these aliases.
type (
	// Influx is the options of data_format "influx".
	Influx = influx.Options
	// Value is the options of data_format "value".
	Value = value.Options
	// Logfmt is the options of data_format "logfmt".
	Logfmt = logfmt.Options
	// CSV is the options of data_format "csv".
	CSV = csv.Options
	// Grok is the options of data_format "grok".
	Grok = grok.Options
	// JSON is the options of data_format "json", Telegraf's flattening parser.
	JSON = json.Options
	// JSONV2 is the options of data_format "json_v2": its [[json_v2]] tables.
	JSONV2 = json_v2.Options
	// Prometheus is the options of data_format "prometheus".
	Prometheus = prometheus.Options
	// Graphite is the options of data_format "graphite".
	Graphite = graphite.Options
)

// validator is what each format's Options has.
type validator interface{ Validate() error }

// format is one registered data format.
type format struct {
	name string
	// options returns the format's Options within c, nil for a format without options.
	options func(c *Config) validator
	// build makes the parser; c is validated.
	build func(c *Config, s parsers.Settings) (parsers.Parser, error)
}

// Format returns the effective data_format: DataFormat, or Default when it is empty.
func (c *Config) Format() string {
	if c.DataFormat == "" {
		return Default
	}
	return c.DataFormat
}

// Formats lists the names of the formats that NewParser builds, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for _, f := range formats {
		names = append(names, f.name)
	}
	slices.Sort(names)
	return names
}

func lookup(name string) (format, bool) {
	for _, f := range formats {
		if f.name == name {
			return f, true
		}
	}
	return format{}, false
}

// Validate reports every problem in one run: an unknown data_format, the chosen format's
// option problems, and each option set for a format that is not the chosen one.
func (c *Config) Validate() error {
	name := c.Format()
	chosen, known := lookup(name)
	var errs []error
	if !known {
		errs = append(errs, morse.Errorf("data_format", "%q is not a data format morse reads: use one of %s",
			name, quoteAll(Formats())))
	} else if chosen.options != nil {
		errs = append(errs, chosen.options(c).Validate())
	}
	for _, f := range formats {
		if f.name == name || f.options == nil {
			continue
		}
		for _, key := range setKeys(f.options(c)) {
			if known {
				errs = append(errs, morse.Errorf(key, "is an option of data_format %q, not of %q", f.name, name))
			}
		}
	}
	return errors.Join(errs...)
}

// NewParser builds the parser of the chosen format with the input's settings. The parser of
// "influx" is an influx.Entries, whose Parser an input may take to set LineMetrics.
func (c *Config) NewParser(s parsers.Settings) (parsers.Parser, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	f, _ := lookup(c.Format())
	p, err := f.build(c, s)
	if err != nil {
		return nil, fmt.Errorf("data_format %q: %w", f.name, err)
	}
	return p, nil
}

// setKeys lists the toml keys of the fields of opts (a pointer to an Options struct) that
// hold other than their zero value.
func setKeys(opts validator) []string {
	rv := reflect.ValueOf(opts).Elem()
	var keys []string
	for i := 0; i < rv.NumField(); i++ {
		sf := rv.Type().Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if key == "" || key == "-" || !sf.IsExported() || rv.Field(i).IsZero() {
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
