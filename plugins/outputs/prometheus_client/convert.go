package prometheusclient

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
)

// converter turns metrics into the store's series, by Telegraf's rules for metric_version
// 1 (outputs/prometheus_client/v1) or 2 (the prometheus serializer's collection). A morse
// metric carries no Prometheus type, where Telegraf's carries the one its input gave it,
// so the type of a family is found by Telegraf's own conventions (see the package doc).
// It is used under the store's lock.
type converter struct {
	version       int
	stringAsLabel bool
	counters      *glob.Matcher // metric_types.counter
	gauges        *glob.Matcher // metric_types.gauge
	names         *namer
	famNames      map[famKey]string // the family name of a field, "" when none
	marks         map[string]kind   // histograms and summaries the batch shows (version 2)

	pairs []labelPair // scratch: the labels of the metric being written
	buf   []byte      // scratch: their text
}

type famKey struct {
	measurement, field string
	trim               bool // the field's _bucket, _sum or _count is cut off
}

type labelPair struct{ name, value string }

func newConverter(version int, stringAsLabel bool, counters, gauges *glob.Matcher, utf8Names bool) *converter {
	return &converter{version: version, stringAsLabel: stringAsLabel, counters: counters, gauges: gauges,
		names: newNamer(utf8Names), famNames: map[famKey]string{}, marks: map[string]kind{}}
}

// outcome is what became of one metric.
type outcome uint8

const (
	stored  outcome = iota // at least one sample was written
	nothing                // no field makes a sample
	full                   // the store had no room for a new series
)

// write puts the batch into st at now (UnixNano) and returns what became of each metric
// that was not stored, by position; nil when all were.
func (c *converter) write(st *store, batch []morse.Metric, now int64) map[int]outcome {
	var failed map[int]outcome
	if c.version == 2 {
		c.markBatch(batch)
		defer clear(c.marks)
	}
	for i, m := range batch {
		var o outcome
		if c.version == 1 {
			o = c.addV1(st, m.Expanded(), now)
		} else {
			o = c.addV2(st, m.Expanded(), now)
		}
		if o != stored {
			if failed == nil {
				failed = map[int]outcome{}
			}
			failed[i] = o
		}
	}
	return failed
}

// famName is the sanitized family name of a field, "" when it sanitizes to nothing. With
// trim, a _bucket, _sum or _count suffix is cut off first, as for a summary's or
// histogram's fields. A measurement named "prometheus" gives the field's name alone.
func (c *converter) famName(measurement, field string, trim bool) string {
	k := famKey{measurement, field, trim}
	if n, ok := c.famNames[k]; ok {
		return n
	}
	if trim {
		field = trimSuffix(field)
	}
	full := field
	if measurement != "prometheus" || c.version == 1 {
		full = measurement + "_" + field
	}
	n, _ := c.names.metric(full)
	if len(c.famNames) < maxNames {
		c.famNames[famKey{strings.Clone(k.measurement), strings.Clone(k.field), trim}] = n
	}
	return n
}

func trimSuffix(field string) string {
	for _, suf := range [...]string{"_bucket", "_sum", "_count"} {
		if len(field) > len(suf) && strings.HasSuffix(field, suf) {
			return field[:len(field)-len(suf)]
		}
	}
	return field
}

// scalarKind is the type of a counter, gauge or untyped family: the one its convention
// gives, unless metric_types names it (gauge wins over counter, as in Telegraf).
func (c *converter) scalarKind(name string, k kind) kind {
	if c.counters.Match(name) {
		k = counterKind
	}
	if c.gauges.Match(name) {
		k = gaugeKind
	}
	return k
}

// labels renders the metric's labels into c.buf: its tags (but for le of a histogram and
// quantile of a summary) and, with string_as_label, its string fields, by sanitized name.
// A tag wins over a string field of the same name in version 2, the field in version 1,
// as in Telegraf. Labels with an empty value are left out: Prometheus does not tell them
// from a missing label.
func (c *converter) labels(m morse.Metric, k kind) []byte {
	c.pairs = c.pairs[:0]
	resort := false
	for _, t := range m.Tags() {
		if t.Value == "" || k == histogramKind && t.Key == "le" || k == summaryKind && t.Key == "quantile" {
			continue
		}
		if name, ok := c.names.label(t.Key); ok {
			resort = resort || name != t.Key
			c.pairs = append(c.pairs, labelPair{name, t.Value})
		}
	}
	if c.stringAsLabel {
		for _, f := range m.Fields() {
			if f.Value.Type() != morse.TypeString || f.Value.Str() == "" {
				continue
			}
			if name, ok := c.names.label(f.Key); ok {
				c.pairs = append(c.pairs, labelPair{name, f.Value.Str()})
				resort = true
			}
		}
	}
	if resort {
		// Stable: of two labels of one name, the tag comes first.
		slices.SortStableFunc(c.pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
		c.pairs = dedupLabels(c.pairs, c.version == 1)
	}
	b := c.buf[:0]
	for i, p := range c.pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.name...)
		b = append(b, '=', '"')
		b = appendEscaped(b, p.value)
		b = append(b, '"')
	}
	c.buf = b
	return b
}

// sampleValue converts a field to a sample's value as Telegraf does; bool only in version 2.
func (c *converter) sampleValue(v morse.Value) (float64, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		return v.Float(), true
	case morse.TypeInt:
		return float64(v.Int()), true
	case morse.TypeUint:
		return float64(v.Uint()), true
	case morse.TypeBool:
		if c.version == 1 {
			return 0, false
		}
		if v.Bool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// sampleCount converts a field to a histogram's or summary's count; negative counts are
// refused.
func sampleCount(v morse.Value) (uint64, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		if v.Float() < 0 || math.IsNaN(v.Float()) {
			return 0, false
		}
		return uint64(v.Float()), true
	case morse.TypeInt:
		if v.Int() < 0 {
			return 0, false
		}
		return uint64(v.Int()), true
	case morse.TypeUint:
		return v.Uint(), true
	}
	return 0, false
}

// parseBound reads a le or quantile value, or a version 1 field key.
func parseBound(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// dedupLabels keeps one label of each name in pairs, sorted by name with a tag before a
// string field of its name: the first, or with lastWins the last.
func dedupLabels(pairs []labelPair, lastWins bool) []labelPair {
	out := pairs[:0]
	for _, p := range pairs {
		if n := len(out); n > 0 && out[n-1].name == p.name {
			if lastWins {
				out[n-1] = p
			}
			continue
		}
		out = append(out, p)
	}
	return out
}
