// Package dataformat is the registry of serializers that outputs embed: Config holds
// Telegraf's data_format and the options of every format under their Telegraf keys, checks
// them all in one run, and builds the serializer the output writes with.
//
// An output embeds Config, so that a Telegraf [[outputs.X]] table's data_format and
// influx_*, json_*, prometheus_*, carbon2_*, csv_*, splunkmetric_* and graphite's keys decode into it
// unchanged; the config loader takes the keys of embedded structs as the output's own.
package dataformat

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/carbon2"
	"github.com/morse-agent/morse/plugins/serializers/csv"
	"github.com/morse-agent/morse/plugins/serializers/graphite"
	"github.com/morse-agent/morse/plugins/serializers/influx"
	"github.com/morse-agent/morse/plugins/serializers/json"
	"github.com/morse-agent/morse/plugins/serializers/msgpack"
	"github.com/morse-agent/morse/plugins/serializers/prometheus"
	"github.com/morse-agent/morse/plugins/serializers/prometheusremotewrite"
	"github.com/morse-agent/morse/plugins/serializers/splunkmetric"
)

// The options of each format, under names that Config embeds (the packages' types are
// all called Options, and a struct cannot embed two types of one name).
type (
	JSON         = json.Options
	Prometheus   = prometheus.Options
	Carbon2      = carbon2.Options
	CSV          = csv.Options
	SplunkMetric = splunkmetric.Options
	Graphite     = graphite.Options
)

// Influx are Telegraf's influx serializer options.
type Influx struct {
	// InfluxMaxLineBytes splits longer metrics into several lines; 0 means no limit.
	InfluxMaxLineBytes int `toml:"influx_max_line_bytes"`
	// InfluxSortFields writes fields in ascending order of their keys.
	InfluxSortFields bool `toml:"influx_sort_fields"`
	// InfluxUintSupport writes unsigned integers as 42u instead of clamped 42i.
	InfluxUintSupport bool `toml:"influx_uint_support"`
	// InfluxOmitTimestamp writes lines without a timestamp.
	InfluxOmitTimestamp bool `toml:"influx_omit_timestamp"`
}

// Validate reports every problem of the options.
func (o *Influx) Validate() error {
	if o.InfluxMaxLineBytes < 0 {
		return morse.Errorf("influx_max_line_bytes", "must not be negative (0 means no limit), got %d", o.InfluxMaxLineBytes)
	}
	return nil
}

// Config is data_format and the options of every format. Only the options of the format
// that data_format names may be set.
type Config struct {
	// DataFormat is the format written; "" means "influx".
	DataFormat string `toml:"data_format"`
	Influx
	JSON
	Prometheus
	Carbon2
	CSV
	SplunkMetric
	Graphite
}

// format is one registered data_format: its options in Config, how to check and build it.
type format struct {
	options  func(c *Config) any // a pointer to the format's options in c; nil for none
	validate func(c *Config) error
	build    func(c *Config) (serializers.Serializer, error)
}

var formats = map[string]format{
	"influx": {
		options:  func(c *Config) any { return &c.Influx },
		validate: func(c *Config) error { return c.Influx.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return newInflux(c.Influx), nil },
	},
	"json": {
		options:  func(c *Config) any { return &c.JSON },
		validate: func(c *Config) error { return c.JSON.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return json.New(c.JSON) },
	},
	"msgpack": {
		build: func(*Config) (serializers.Serializer, error) { return msgpack.New(), nil },
	},
	"prometheus": {
		options:  func(c *Config) any { return &c.Prometheus },
		validate: func(c *Config) error { return c.Prometheus.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return prometheus.New(c.Prometheus) },
	},
	// prometheusremotewrite shares prometheus_sort_metrics and prometheus_string_as_label
	// with prometheus, as in Telegraf; the prometheus serializer's other keys are not its.
	"prometheusremotewrite": {
		options:  func(c *Config) any { return &c.Prometheus },
		validate: func(c *Config) error { return validateRemoteWrite(c.Prometheus) },
		build: func(c *Config) (serializers.Serializer, error) {
			return prometheusremotewrite.New(prometheusremotewrite.Options{
				SortMetrics: c.Prometheus.SortMetrics, StringAsLabel: c.Prometheus.StringAsLabel}), nil
		},
	},
	"carbon2": {
		options:  func(c *Config) any { return &c.Carbon2 },
		validate: func(c *Config) error { return c.Carbon2.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return carbon2.New(c.Carbon2) },
	},
	"csv": {
		options:  func(c *Config) any { return &c.CSV },
		validate: func(c *Config) error { return c.CSV.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return csv.New(c.CSV) },
	},
	"graphite": {
		options:  func(c *Config) any { return &c.Graphite },
		validate: func(c *Config) error { return c.Graphite.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return graphite.New(c.Graphite) },
	},
	"splunkmetric": {
		options:  func(c *Config) any { return &c.SplunkMetric },
		validate: func(c *Config) error { return c.SplunkMetric.Validate() },
		build:    func(c *Config) (serializers.Serializer, error) { return splunkmetric.New(c.SplunkMetric) },
	},
}

// Formats lists the data_format values that are supported, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FormatName is the data_format in effect: DataFormat, or "influx" when it is empty.
func (c *Config) FormatName() string {
	if c.DataFormat == "" {
		return "influx"
	}
	return c.DataFormat
}

// Validate reports every problem in one run: an unknown data_format, the chosen format's
// options, and each option of another format that is set, which would otherwise be
// ignored without a word.
func (c *Config) Validate() error {
	var errs []error
	name := c.FormatName()
	f, ok := formats[name]
	if !ok {
		errs = append(errs, morse.Errorf("data_format", "%q is not supported: use one of %s", c.DataFormat, strings.Join(Formats(), ", ")))
	} else if f.validate != nil {
		errs = append(errs, f.validate(c))
	}
	// Formats may share their options (prometheus and prometheusremotewrite): those of the
	// chosen format are checked by it, and others' are reported once, under the first name.
	seen := map[any]bool{}
	if ok && f.options != nil {
		seen[f.options(c)] = true
	}
	for _, other := range Formats() {
		if other == name || formats[other].options == nil || seen[formats[other].options(c)] {
			continue
		}
		seen[formats[other].options(c)] = true
		for _, key := range setKeys(formats[other].options(c)) {
			errs = append(errs, morse.Errorf(key, "is an option of data_format %q, but data_format is %q", other, name))
		}
	}
	return errors.Join(errs...)
}

// validateRemoteWrite refuses the prometheus serializer's keys that prometheusremotewrite
// does not read.
func validateRemoteWrite(o Prometheus) error {
	o.SortMetrics, o.StringAsLabel = false, false
	var errs []error
	for _, key := range setKeys(&o) {
		errs = append(errs, morse.Errorf(key, "is an option of data_format \"prometheus\", not of \"prometheusremotewrite\" (which reads only prometheus_sort_metrics and prometheus_string_as_label)"))
	}
	return errors.Join(errs...)
}

// setKeys returns the TOML keys of the fields of *opts that are not zero.
func setKeys(opts any) []string {
	v := reflect.ValueOf(opts).Elem()
	var keys []string
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			keys = append(keys, v.Type().Field(i).Tag.Get("toml"))
		}
	}
	return keys
}

// New builds the serializer that data_format names, after Validate.
func (c *Config) New() (serializers.Serializer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s, err := formats[c.FormatName()].build(c)
	if err != nil {
		return nil, fmt.Errorf("data_format %q: %w", c.FormatName(), err)
	}
	return s, nil
}

// WritesLines reports whether the serializer writes line metrics (morse.NewLineMetric) as
// they are, without taking them apart: influx without influx_sort_fields, which reads
// every field.
func (c *Config) WritesLines() bool {
	return c.FormatName() == "influx" && !c.InfluxSortFields
}

// newInflux returns the line-protocol serializer itself, the fast path, unless
// influx_sort_fields or influx_omit_timestamp change the metric first.
func newInflux(o Influx) serializers.Serializer {
	ser := influx.New(influx.Options{UintSupport: o.InfluxUintSupport, MaxLineBytes: o.InfluxMaxLineBytes})
	if !o.InfluxSortFields && !o.InfluxOmitTimestamp {
		return ser
	}
	return &influxPrepared{ser: ser, sort: o.InfluxSortFields, omitTime: o.InfluxOmitTimestamp}
}

// influxPrepared applies influx_sort_fields and influx_omit_timestamp to a copy of the
// metric before writing it.
type influxPrepared struct {
	ser      *influx.Serializer
	sort     bool
	omitTime bool
	// mu guards scratch, sort's reused copy of the fields. A writer that finds it taken
	// (writes may run at once, in kafka) sorts into a copy of its own instead of waiting.
	mu      sync.Mutex
	scratch []morse.Field
}

func (p *influxPrepared) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	if p.omitTime {
		m = m.WithTime(time.Time{})
	}
	if !p.sort {
		return p.ser.AppendMetric(dst, m)
	}
	if !p.mu.TryLock() {
		return p.ser.AppendMetric(dst, influx.SortFields(m, nil))
	}
	defer p.mu.Unlock()
	dst, err := p.ser.AppendMetric(dst, influx.SortFields(m, &p.scratch))
	clear(p.scratch) // no string of the metric is kept alive by the scratch
	return dst, err
}
