// Package prometheus writes metrics in the Prometheus text exposition format (0.0.4), as
// Telegraf's prometheus serializer does with metric_version 2 naming: each field is a sample
// of the family <measurement>_<field> (the field alone for the measurement "prometheus"),
// the tags are its labels, and the samples of a batch are gathered into families,
//
//	# HELP cpu_time_idle Telegraf collected metric
//	# TYPE cpu_time_idle untyped
//	cpu_time_idle{host="example.org"} 42
//
// A morse metric carries no Prometheus type, where Telegraf's carries the one its input
// gave it. So a family is untyped unless prometheus_metric_types names it a counter or a
// gauge, or it follows Telegraf's conventions for histograms and summaries within the batch:
// fields <name>_bucket on metrics tagged le make the histogram <name>, fields on metrics
// tagged quantile the summary <name>, and then <name>_sum and <name>_count fields of the
// same batch join them. A histogram's or summary's sum and count written without its
// buckets or quantiles are written as untyped samples.
//
// Without prometheus_sort_metrics, families and samples come in the order first seen
// (Telegraf's order is a Go map's, random). Names and label names are sanitized as in
// Telegraf; a field whose name is left empty, and string fields (unless
// prometheus_string_as_label), are not written.
package prometheus

import (
	"errors"
	"fmt"
	"path"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// ErrNoSamples means no field of the metric makes a sample; it reaches callers wrapped in a
// *morse.PermanentError with Reason morse.ReasonSerialize.
var ErrNoSamples = errors.New("no field makes a Prometheus sample")

// Options are Telegraf's prometheus serializer options.
type Options struct {
	// ExportTimestamp (prometheus_export_timestamp) writes each sample's time, in
	// milliseconds.
	ExportTimestamp bool `toml:"prometheus_export_timestamp"`
	// SortMetrics (prometheus_sort_metrics) sorts families by name and samples by labels.
	SortMetrics bool `toml:"prometheus_sort_metrics"`
	// StringAsLabel (prometheus_string_as_label) makes string fields labels.
	StringAsLabel bool `toml:"prometheus_string_as_label"`
	// CompactEncoding (prometheus_compact_encoding) leaves out the # HELP lines.
	CompactEncoding bool `toml:"prometheus_compact_encoding"`
	// MetricTypes (prometheus_metric_types) names, by glob, the families that are counters
	// or gauges.
	MetricTypes MetricTypes `toml:"prometheus_metric_types"`
	// NameSanitization (prometheus_name_sanitization) is "legacy" (the default: names are
	// made of ASCII letters, digits, _ and :) or "utf8" (other characters are written as
	// _, as the exposition format's encoder escapes them).
	NameSanitization string `toml:"prometheus_name_sanitization"`
}

// MetricTypes is the [prometheus_metric_types] table: globs of family names.
type MetricTypes struct {
	Counter []string `toml:"counter"`
	Gauge   []string `toml:"gauge"`
}

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	var errs []error
	switch o.NameSanitization {
	case "", "legacy", "utf8":
	default:
		errs = append(errs, morse.Errorf("prometheus_name_sanitization", "%q: must be \"legacy\" or \"utf8\"", o.NameSanitization))
	}
	for key, pats := range map[string][]string{"prometheus_metric_types.counter": o.MetricTypes.Counter, "prometheus_metric_types.gauge": o.MetricTypes.Gauge} {
		for _, p := range pats {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, morse.Errorf(key, "bad pattern %q: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Serializer writes the exposition format. It holds no per-call state, so one Serializer
// may be used by many goroutines at once.
type Serializer struct {
	o    Options
	utf8 bool
}

// New returns a Serializer, or the options' problems.
func New(o Options) (*Serializer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Serializer{o: o, utf8: o.NameSanitization == "utf8"}, nil
}

var _ serializers.BatchSerializer = (*Serializer)(nil)

// AppendMetric appends m's families, as Telegraf's Serialize does: a batch of one.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	c := s.collect([]morse.Metric{m})
	if c.samples == 0 {
		return dst, s.fail(m)
	}
	return c.appendText(dst, s.o), nil
}

// AppendBatch appends the families of the whole batch. A metric of which no field makes a
// sample is reported in a *serializers.Error.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) ([]byte, error) {
	c := s.collect(batch)
	var failed *serializers.Error // allocated only on a failure
	for i, n := range c.perMetric {
		if n == 0 {
			failed = failed.With(i, s.fail(batch[i]))
		}
	}
	return c.appendText(dst, s.o), failed.Err()
}

func (s *Serializer) fail(m morse.Metric) error {
	return morse.Permanent(morse.ReasonSerialize, fmt.Errorf("prometheus: measurement %q: %w", m.Name(), ErrNoSamples))
}

// collect gathers the batch's samples into families.
func (s *Serializer) collect(batch []morse.Metric) *collection {
	c := &collection{s: s, byKey: map[familyKey]*family{}, perMetric: make([]int, len(batch))}
	expanded := make([]morse.Metric, len(batch))
	for i, m := range batch {
		expanded[i] = m.Expanded()
	}
	c.inferTypes(expanded)
	for i, m := range expanded {
		c.perMetric[i] = c.add(m)
		c.samples += c.perMetric[i]
	}
	return c
}

// metricName is Telegraf's metric_version 2 name of a field's family.
func metricName(measurement, field string, k kind) string {
	if k == histogramKind || k == summaryKind {
		field = trimSuffix(field)
	}
	if measurement == "prometheus" {
		return field
	}
	return measurement + "_" + field
}

// typeOf applies prometheus_metric_types to a scalar family.
func (s *Serializer) typeOf(name string, k kind) kind {
	if k != untypedKind {
		return k
	}
	if match(s.o.MetricTypes.Gauge, name) {
		return gaugeKind
	}
	if match(s.o.MetricTypes.Counter, name) {
		return counterKind
	}
	return k
}

func match(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
