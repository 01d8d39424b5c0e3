package prometheusremotewrite

import (
	"cmp"
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

// series is one series of the batch: its labels, sorted by name with __name__ among them,
// and its samples, in the order they came.
type series struct {
	lo, hi   int32 // labels in collector.labels
	next     int32 // the next series of the same hash, or -1
	first    sample
	more     []sample
	unsorted bool // some sample came before an earlier one
}

// collector gathers the series of one batch. Serializer pools them.
type collector struct {
	o      Options
	seed   maphash.Seed
	h      maphash.Hash
	labels []label // every series' labels, one after another
	common []label // the labels of the metric at hand
	work   []label // one series' labels, being built
	series []series
	byHash map[uint64]int32 // first series of each hash
	names  map[nameKey]string
	hist   map[string]bool // names that the batch shows to be histograms
	summ   map[string]bool // and summaries
	pb     []byte          // the encoded message
	buf    []sample        // one series' samples, being encoded
}

func newCollector(o Options) *collector {
	c := &collector{o: o, seed: maphash.MakeSeed(), byHash: map[uint64]int32{}, names: map[nameKey]string{}}
	c.h.SetSeed(c.seed)
	return c
}

// size is about how many bytes the collector holds, for the pool's bound.
func (c *collector) size() int {
	return cap(c.labels)*32 + cap(c.series)*64 + cap(c.pb) + cap(c.buf)*24
}

// reset empties the collector, keeping its buffers; no string of the batch stays
// reachable from it.
func (c *collector) reset() {
	clear(c.labels)
	clear(c.common[:cap(c.common)])
	clear(c.work[:cap(c.work)])
	for i := range c.series {
		c.series[i].more = nil
	}
	c.labels, c.common, c.work, c.series = c.labels[:0], c.common[:0], c.work[:0], c.series[:0]
	clear(c.byHash)
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
	ts := m.Time().UnixNano() / 1e6
	for _, f := range m.Fields() {
		name, ok := c.metricName(m.Name(), f.Key, k != untyped)
		if !ok {
			why = problem{"failed to parse metric name", f}
			continue
		}
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
			c.put(name, sample{ts, v, real})
			made = 1
		}
		n += made
	}
	return n, why
}

// nameKey is what a series' name is made of.
type nameKey struct {
	measurement, field string
	distribution       bool
}

// maxNames bounds the names a collector remembers; past it, it forgets them all.
const maxNames = 4096

// metricName is the sanitized name of a field's series (prometheus.MetricName), or false
// when sanitizing leaves nothing. The names are remembered from batch to batch, so that
// the same measurement and field are not joined and checked again for every sample.
func (c *collector) metricName(measurement, field string, distribution bool) (string, bool) {
	k := nameKey{measurement, field, distribution}
	if n, ok := c.names[k]; ok {
		return n, n != ""
	}
	n, ok := prometheus.SanitizeMetricName(prometheus.MetricName(measurement, field, distribution), false)
	if !ok {
		n = ""
	}
	if len(c.names) >= maxNames {
		clear(c.names)
	}
	// The key's strings are copied: they may point into a large buffer of the input.
	c.names[nameKey{strings.Clone(measurement), strings.Clone(field), distribution}] = n
	return n, ok
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
		c.putIfAbsent(name+"_sum", ts)
		c.putIfAbsent(name+"_count", ts)
		c.putIfAbsent(name+"_bucket", ts, label{"le", "+Inf"})
		c.put(name+"_bucket", sample{ts, float64(n), real}, label{"le", formatFloat(bound)})
	case strings.HasSuffix(f.Key, "_sum"):
		v, ok := prometheus.SampleSum(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_sum", sample{ts, v, real})
	case strings.HasSuffix(f.Key, "_count"):
		n, ok := prometheus.SampleCount(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_bucket", sample{ts, float64(n), fromCount}, label{"le", "+Inf"})
		c.put(name+"_count", sample{ts, float64(n), real})
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
		c.put(name+"_sum", sample{ts, v, real})
	case strings.HasSuffix(f.Key, "_count"):
		n, ok := prometheus.SampleCount(f.Value)
		if !ok {
			return 0, problem{badValue, f}
		}
		c.put(name+"_count", sample{ts, float64(n), real})
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
		c.put(name, sample{ts, v, real}, label{"quantile", formatFloat(at)})
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

// seriesLabels builds in c.work the labels of the series name with the common labels and
// extra: sorted by name, __name__ first among equals, and a later label of a name already
// there left out (a receiver refuses a series with two labels of one name).
func (c *collector) seriesLabels(name string, extra []label) []label {
	w := append(c.work[:0], label{"__name__", name})
	w = append(w, c.common...)
	w = append(w, extra...)
	if !slices.IsSortedFunc(w, byName) {
		slices.SortStableFunc(w, byName)
	}
	w = slices.CompactFunc(w, func(a, b label) bool { return a.name == b.name })
	c.work = w
	return w
}

func byName(a, b label) int { return strings.Compare(a.name, b.name) }

// find returns the series of labels ls, or -1, and their hash.
func (c *collector) find(ls []label) (int32, uint64) {
	c.h.Reset()
	for _, l := range ls {
		c.h.WriteString(l.name)
		c.h.WriteByte(0)
		c.h.WriteString(l.value)
		c.h.WriteByte(0)
	}
	h := c.h.Sum64()
	i, ok := c.byHash[h]
	if !ok {
		return -1, h
	}
	for ; i >= 0; i = c.series[i].next {
		s := &c.series[i]
		if slices.Equal(c.labels[s.lo:s.hi], ls) {
			return i, h
		}
	}
	return -1, h
}

// create adds the series of labels ls, of hash h, with its first sample.
func (c *collector) create(ls []label, h uint64, smp sample) {
	lo := int32(len(c.labels))
	c.labels = append(c.labels, ls...)
	next := int32(-1)
	if i, ok := c.byHash[h]; ok {
		next = i
	}
	c.byHash[h] = int32(len(c.series))
	c.series = append(c.series, series{lo: lo, hi: int32(len(c.labels)), next: next, first: smp})
}

// put adds smp to the series of name and extra.
func (c *collector) put(name string, smp sample, extra ...label) {
	ls := c.seriesLabels(name, extra)
	i, h := c.find(ls)
	if i < 0 {
		c.create(ls, h, smp)
		return
	}
	c.series[i].add(smp)
}

// putIfAbsent adds a placeholder, 0, to the series of name and extra unless the batch has
// the series already.
func (c *collector) putIfAbsent(name string, ts int64, extra ...label) {
	ls := c.seriesLabels(name, extra)
	if i, h := c.find(ls); i < 0 {
		c.create(ls, h, sample{ts: ts, weight: placeholder})
	}
}

func (s *series) last() *sample {
	if len(s.more) > 0 {
		return &s.more[len(s.more)-1]
	}
	return &s.first
}

// add adds a sample: after the last, in its place at the same time, or out of order, to be
// sorted when the series is written.
func (s *series) add(smp sample) {
	last := s.last()
	switch {
	case smp.ts == last.ts:
		merge(last, smp)
		return
	case smp.ts < last.ts:
		s.unsorted = true
	}
	s.more = append(s.more, smp)
}

// merge puts smp in place of old, of the same time, when it weighs no less, or when it is a
// count's +Inf bucket and old is 0.
func merge(old *sample, smp sample) {
	if smp.weight >= old.weight || smp.weight == fromCount && old.value == 0 {
		*old = smp
	}
}

// samples returns the series' samples in time order, one per time, in c.buf.
func (c *collector) samples(s *series) []sample {
	buf := append(c.buf[:0], s.first)
	buf = append(buf, s.more...)
	if s.unsorted {
		slices.SortStableFunc(buf, func(a, b sample) int { return cmp.Compare(a.ts, b.ts) })
		out := buf[:1]
		for _, smp := range buf[1:] {
			if last := &out[len(out)-1]; last.ts == smp.ts {
				merge(last, smp)
			} else {
				out = append(out, smp)
			}
		}
		buf = out
	}
	c.buf = buf
	return buf
}

// sortSeries puts the series in Telegraf's prometheus_sort_metrics order: fewer labels
// first, then by each label's name and value.
func (c *collector) sortSeries() {
	slices.SortStableFunc(c.series, func(a, b series) int {
		la, lb := c.labels[a.lo:a.hi], c.labels[b.lo:b.hi]
		if d := cmp.Compare(len(la), len(lb)); d != 0 {
			return d
		}
		for i := range la {
			if d := strings.Compare(la[i].name, lb[i].name); d != 0 {
				return d
			}
			if d := strings.Compare(la[i].value, lb[i].value); d != 0 {
				return d
			}
		}
		return 0
	})
}
