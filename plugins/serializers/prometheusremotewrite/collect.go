package prometheusremotewrite

import (
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/prometheus"
)

// kind is what a metric is by Telegraf's conventions, as the batch shows them.
type kind uint8

const (
	untyped kind = iota
	histogram
	summary
)

type label struct{ name, value string }

// weight orders the samples of one series at one timestamp: a later sample replaces an
// earlier one of no greater weight. Placeholders are Telegraf's zero sum, count and +Inf
// bucket of a histogram whose batch has only buckets; a +Inf bucket implied by a count
// replaces a placeholder, or a bucket of value 0, as in Telegraf.
const (
	placeholder uint8 = iota
	fromCount
	real
)

type sample struct {
	ts     int64 // milliseconds
	value  float64
	weight uint8
}

// collector gathers the series of one batch. Serializer pools them.
//
// A metric's tags make one label set, shared by the series of all its fields (each is the
// set plus __name__, and le or quantile for a histogram's bucket or a summary's quantile):
// the set is hashed and looked up once per metric, not once per sample, and not at all
// when the metric has the labels of the one before; a series is then found by its set's
// number and its name. The set's labels are encoded once per batch, and each of its
// series copies those bytes.
type collector struct {
	o      Options
	seed   maphash.Seed
	h      maphash.Hash
	common []label // the labels of the metric at hand
	set    int32   // the label set of the metric at hand, or -1 before it is known

	labels []label    // every set's labels, one set after another
	sets   []labelSet // the label sets of the batch
	setOf  map[uint64]int32
	last   int32 // the set of the metric before, or -1

	series   []series
	seriesOf map[seriesKey]int32
	// seriesByID finds a series without le or quantile by set and name number: one 8-byte
	// key, no string hashed; seriesOf finds the others.
	seriesByID map[uint64]int32

	names  [2]map[string]fieldNames // by measurement, without and with distribution
	nameOf []string                 // the names by number
	namePB [][]byte                 // and as encoded __name__ labels
	idOf   map[string]int32         // their numbers
	hist   map[string]bool          // names that the batch shows to be histograms
	summ   map[string]bool          // and summaries

	pb       []byte  // the encoded message
	setPB    []byte  // the sets' labels, encoded
	labelEnd []int32 // where each label of c.labels ends in setPB
	sorted   []label // the series' labels, for prometheus_sort_metrics
	buf      []sample
}

func newCollector(o Options) *collector {
	c := &collector{o: o, seed: maphash.MakeSeed(), setOf: map[uint64]int32{}, seriesOf: map[seriesKey]int32{},
		seriesByID: map[uint64]int32{}, idOf: map[string]int32{}, last: -1}
	c.h.SetSeed(c.seed)
	return c
}

// size is about how many bytes the collector holds, for the pool's bound.
func (c *collector) size() int {
	return cap(c.labels)*36 + cap(c.sets)*16 + cap(c.series)*96 + cap(c.pb) + cap(c.setPB) + cap(c.sorted)*32 + cap(c.buf)*24
}

// reset empties the collector, keeping its buffers; no string of the batch stays
// reachable from it.
func (c *collector) reset() {
	clear(c.labels)
	clear(c.common[:cap(c.common)])
	clear(c.sorted[:cap(c.sorted)])
	clear(c.series)
	c.labels, c.common, c.sorted, c.series, c.sets = c.labels[:0], c.common[:0], c.sorted[:0], c.series[:0], c.sets[:0]
	c.setPB, c.labelEnd = c.setPB[:0], c.labelEnd[:0]
	clear(c.setOf)
	clear(c.seriesOf)
	clear(c.seriesByID)
	if len(c.nameOf) >= maxNames {
		clear(c.namePB)
		clear(c.idOf)
		c.names, c.nameOf, c.namePB = [2]map[string]fieldNames{}, c.nameOf[:0], c.namePB[:0]
	}
	c.last = -1
	c.hist, c.summ = nil, nil
}

// inferTypes finds the histograms and summaries of the batch by Telegraf's conventions.
func (c *collector) inferTypes(batch []morse.Metric) {
	for _, m := range batch {
		_, le := m.Tag("le")
		_, q := m.Tag("quantile")
		if !le && !q {
			continue
		}
		for _, f := range m.Expanded().Fields() {
			switch {
			case le && strings.HasSuffix(f.Key, "_bucket"):
				c.hist = mark(c.hist, prometheus.MetricName(m.Name(), f.Key, true))
			case q && !strings.HasSuffix(f.Key, "_sum") && !strings.HasSuffix(f.Key, "_count"):
				c.summ = mark(c.summ, prometheus.MetricName(m.Name(), f.Key, true))
			}
		}
	}
}

func mark(set map[string]bool, name string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[name] = true
	return set
}

// kindOf is a histogram or summary when one of m's fields belongs to one the batch shows.
func (c *collector) kindOf(m morse.Metric) kind {
	if c.hist == nil && c.summ == nil {
		return untyped
	}
	for _, f := range m.Fields() {
		name := prometheus.MetricName(m.Name(), f.Key, true)
		if c.hist[name] {
			return histogram
		}
		if c.summ[name] {
			return summary
		}
	}
	return untyped
}

// commonLabels are m's tags (but le of a histogram and quantile of a summary), by their
// sanitized names and without empty values, and with prometheus_string_as_label its string
// fields whose names no tag has.
func (c *collector) commonLabels(m morse.Metric, k kind) {
	c.common = c.common[:0]
	for _, t := range m.Tags() {
		if k == histogram && t.Key == "le" || k == summary && t.Key == "quantile" || t.Value == "" {
			continue
		}
		if name, ok := prometheus.SanitizeLabelName(t.Key, false); ok {
			c.common = append(c.common, label{name, t.Value})
		}
	}
	if !c.o.StringAsLabel {
		return
	}
	for _, f := range m.Fields() {
		if f.Value.Type() != morse.TypeString {
			continue
		}
		name, ok := prometheus.SanitizeLabelName(f.Key, false)
		if !ok || slices.ContainsFunc(c.common, func(l label) bool { return l.name == name }) {
			continue
		}
		c.common = append(c.common, label{name, f.Value.Str()})
	}
}

// add puts m's samples into their series. It returns how many samples m made and, when
// none, why the last field made none.
func (c *collector) add(m morse.Metric) (n int, why problem) {
	m = m.Expanded()
	k := c.kindOf(m)
	c.commonLabels(m, k)
	c.set = -1
	ts := m.Time().UnixNano() / 1e6
	fields := c.fieldNames(m.Name(), k != untyped)
	for _, f := range m.Fields() {
		id := c.metricName(fields, m.Name(), f.Key, k != untyped)
		if id < 0 {
			why = problem{"failed to parse metric name", f}
			continue
		}
		name := c.nameOf[id]
		var made int
		switch k {
		case histogram:
			made, why = c.addHistogram(m, f, name, ts)
		case summary:
			made, why = c.addSummary(m, f, name, ts)
		default:
			v, ok := prometheus.SampleValue(f.Value)
			if !ok {
				why = problem{badValue, f}
				continue
			}
			c.putByID(id, sample{ts, v, real})
			made = 1
		}
		n += made
	}
	return n, why
}

// problem is why a field made no sample; the text is made only for a metric that made none.
type problem struct {
	what  string
	field morse.Field
}

const badValue = "bad sample value"

func (p problem) String() string {
	return fmt.Sprintf("%s: field %q = %s %q", p.what, p.field.Key, p.field.Value.Type(), p.field.Value.String())
}

// addHistogram adds one field of a histogram, as Telegraf does: a bucket (with the sum,
// count and +Inf bucket at 0 when the batch has none yet), the sum, or the count (with the
// +Inf bucket when there is none, or it is 0). A bucket that cannot be read adds no zeros,
// where Telegraf's adds them before it reads the bucket.
func (c *collector) addHistogram(m morse.Metric, f morse.Field, name string, ts int64) (int, problem) {
	switch {
	case strings.HasSuffix(f.Key, "_bucket"):
		le, ok := m.Tag("le")
		if !ok {
			return 0, problem{"can't find le label", f}
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return 0, problem{"can't parse le " + strconv.Quote(le), f}
		}
		n, ok := prometheus.SampleCount(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.putIfAbsent(name+"_sum", label{}, ts)
		c.putIfAbsent(name+"_count", label{}, ts)
		c.putIfAbsent(name+"_bucket", label{"le", "+Inf"}, ts)
		c.put(name+"_bucket", label{"le", formatFloat(bound)}, sample{ts, float64(n), real})
	case strings.HasSuffix(f.Key, "_sum"):
		v, ok := prometheus.SampleSum(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_sum", label{}, sample{ts, v, real})
	case strings.HasSuffix(f.Key, "_count"):
		n, ok := prometheus.SampleCount(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_bucket", label{"le", "+Inf"}, sample{ts, float64(n), fromCount})
		c.put(name+"_count", label{}, sample{ts, float64(n), real})
	default:
		return 0, problem{"a histogram's field has no _count, _sum or _bucket suffix", f}
	}
	return 1, problem{}
}

// addSummary adds one field of a summary: the sum, the count, or a quantile.
func (c *collector) addSummary(m morse.Metric, f morse.Field, name string, ts int64) (int, problem) {
	switch {
	case strings.HasSuffix(f.Key, "_sum"):
		v, ok := prometheus.SampleSum(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_sum", label{}, sample{ts, v, real})
	case strings.HasSuffix(f.Key, "_count"):
		n, ok := prometheus.SampleCount(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_count", label{}, sample{ts, float64(n), real})
	default:
		q, ok := m.Tag("quantile")
		if !ok {
			return 0, problem{"can't find quantile label", f}
		}
		at, err := strconv.ParseFloat(q, 64)
		if err != nil {
			return 0, problem{"can't parse quantile " + strconv.Quote(q), f}
		}
		v, ok := prometheus.SampleValue(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name, label{"quantile", formatFloat(at)}, sample{ts, v, real})
	}
	return 1, problem{}
}

// formatFloat writes a bound as Telegraf's fmt.Sprint does: shortest form, +Inf, -Inf.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
