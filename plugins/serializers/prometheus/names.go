package prometheus

import (
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// SanitizeMetricName returns name as the serializer writes a family's name, by Telegraf's
// rules (legacy ASCII names, or with utf8Names Telegraf's "utf8" sanitization), and false
// for a name left empty. outputs.prometheus_client names its families with it, so that the
// two agree.
func SanitizeMetricName(name string, utf8Names bool) (string, bool) {
	return sanitizeByMode(name, true, utf8Names)
}

// SanitizeLabelName is SanitizeMetricName for label names.
func SanitizeLabelName(name string, utf8Names bool) (string, bool) {
	return sanitizeByMode(name, false, utf8Names)
}

func sanitizeByMode(name string, metric, utf8Names bool) (string, bool) {
	if legacyValid(name, metric) {
		return name, true
	}
	if utf8Names && name != "" && utf8.ValidString(name) {
		return escape(name), true
	}
	return sanitize(name, metric)
}

// AppendLabelValue appends a label value escaped as the text format needs (\, " and line
// feed).
func AppendLabelValue(dst []byte, v string) []byte { return appendEscaped(dst, v) }

// AppendFloat appends a sample value as the text format's encoder writes it.
func AppendFloat(dst []byte, f float64) []byte { return appendFloat(dst, f) }

// SampleValue, SampleCount and SampleSum convert a field's value as Telegraf's functions of
// those names do (a sample's value; a histogram's or summary's count, never negative; its
// sum, never a boolean), for the prometheusremotewrite serializer.
func SampleValue(v morse.Value) (float64, bool) { return sampleValue(v) }

// SampleCount: see SampleValue.
func SampleCount(v morse.Value) (uint64, bool) { return sampleCount(v) }

// SampleSum: see SampleValue.
func SampleSum(v morse.Value) (float64, bool) { return sampleSum(v) }

// MetricName is Telegraf's metric_version 2 name of a field's family, before
// sanitization: <measurement>_<field>, or the field alone for the measurement
// "prometheus"; for a histogram's or summary's field (distribution) without its _bucket,
// _sum or _count suffix.
func MetricName(measurement, field string, distribution bool) string {
	k := untypedKind
	if distribution {
		k = histogramKind
	}
	return metricName(measurement, field, k)
}
