package prometheus

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// kind is a family's Prometheus type; the order is Telegraf's, which sorts families of the
// same name by it.
type kind uint8

const (
	counterKind kind = iota
	gaugeKind
	untypedKind
	summaryKind
	histogramKind
)

var kindNames = [...]string{"counter", "gauge", "untyped", "summary", "histogram"}

type familyKey struct {
	name string
	typ  kind
}

type label struct{ name, value string }

// sample is one series of a family: a value, or a histogram's buckets or a summary's
// quantiles with their sum and count.
type sample struct {
	labels []label
	time   time.Time
	value  float64
	bounds []bound // buckets (le) or quantiles
	sum    float64
	count  uint64
}

// bound is a bucket's upper bound and cumulative count, or a quantile and its value.
type bound struct{ at, value float64 }

type family struct {
	familyKey
	samples []*sample
	byLabel map[string]*sample
}

// collection is the families of one batch.
type collection struct {
	s         *Serializer
	families  []*family
	byKey     map[familyKey]*family
	hist      map[string]bool // family names that the batch shows to be histograms
	summ      map[string]bool // and summaries
	perMetric []int           // samples each metric gave
	samples   int
}

func trimSuffix(field string) string {
	for _, suf := range [...]string{"_bucket", "_sum", "_count"} {
		if strings.HasSuffix(field, suf) {
			return field[:len(field)-len(suf)]
		}
	}
	return field
}

// inferTypes finds the histograms and summaries of the batch by Telegraf's conventions.
func (c *collection) inferTypes(batch []morse.Metric) {
	for _, m := range batch {
		_, le := m.Tag("le")
		_, q := m.Tag("quantile")
		if !le && !q {
			continue
		}
		for _, f := range m.Fields() {
			switch {
			case le && strings.HasSuffix(f.Key, "_bucket"):
				c.mark(&c.hist, metricName(m.Name(), f.Key, histogramKind))
			case q && !strings.HasSuffix(f.Key, "_sum") && !strings.HasSuffix(f.Key, "_count"):
				c.mark(&c.summ, metricName(m.Name(), f.Key, summaryKind))
			}
		}
	}
}

func (c *collection) mark(set *map[string]bool, name string) {
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[name] = true
}

// kindOf is the type of metric m: a histogram or summary when one of its fields belongs to
// one that the batch shows, untyped otherwise.
func (c *collection) kindOf(m morse.Metric) kind {
	if c.hist == nil && c.summ == nil {
		return untypedKind
	}
	for _, f := range m.Fields() {
		name := metricName(m.Name(), f.Key, histogramKind)
		if c.hist[name] {
			return histogramKind
		}
		if c.summ[name] {
			return summaryKind
		}
	}
	return untypedKind
}

// labels are m's tags, and string fields with prometheus_string_as_label, as label pairs.
func (c *collection) labels(m morse.Metric, k kind) []label {
	out := make([]label, 0, len(m.Tags()))
	for _, t := range m.Tags() {
		if k == histogramKind && t.Key == "le" || k == summaryKind && t.Key == "quantile" {
			continue
		}
		if name, ok := c.s.labelName(t.Key); ok {
			out = append(out, label{name, t.Value})
		}
	}
	if !c.s.o.StringAsLabel {
		return out
	}
	added := false
	for _, f := range m.Fields() {
		if f.Value.Type() != morse.TypeString {
			continue
		}
		name, ok := c.s.labelName(f.Key)
		if !ok || slices.ContainsFunc(out, func(l label) bool { return l.name == name }) {
			continue // a tag of the same name wins
		}
		out = append(out, label{name, f.Value.Str()})
		added = true
	}
	if added {
		slices.SortStableFunc(out, func(a, b label) int { return strings.Compare(a.name, b.name) })
	}
	return out
}

func labelKey(ls []label) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.name)
		b.WriteByte(0)
		b.WriteString(l.value)
		b.WriteByte(0)
	}
	return b.String()
}

// add puts m's fields into their families, as Telegraf's Collection.Add does, and returns
// how many samples they made, changed or were superseded by.
func (c *collection) add(m morse.Metric) int {
	k := c.kindOf(m)
	labels := c.labels(m, k)
	key := labelKey(labels)
	n := 0
	for _, f := range m.Fields() {
		name, ok := c.s.metricName(metricName(m.Name(), f.Key, k))
		if !ok {
			continue
		}
		fam := c.family(familyKey{name, c.s.typeOf(name, k)})
		existing := fam.byLabel[key]
		if existing != nil && m.Time().Before(existing.time) {
			// An older value of a sample the batch already has: the exposition holds one
			// value a series, the newest, so the field is superseded, not lost.
			n++
			continue
		}
		if c.put(fam, existing, key, labels, m, f, k) {
			n++
		}
	}
	return n
}

// put writes one field into its sample, creating it when needed.
func (c *collection) put(fam *family, smp *sample, key string, labels []label, m morse.Metric, f morse.Field, k kind) bool {
	switch k {
	case histogramKind, summaryKind:
		return c.putDistribution(fam, smp, key, labels, m, f, k)
	}
	v, ok := sampleValue(f.Value)
	if !ok {
		return false
	}
	c.store(fam, key, &sample{labels: labels, time: m.Time(), value: v})
	return true
}

func (c *collection) putDistribution(fam *family, smp *sample, key string, labels []label, m morse.Metric, f morse.Field, k kind) bool {
	fresh := smp == nil
	if fresh {
		smp = &sample{labels: labels}
	}
	smp.time = m.Time()
	switch {
	case k == histogramKind && strings.HasSuffix(f.Key, "_bucket"):
		le, ok := m.Tag("le")
		at, err := strconv.ParseFloat(le, 64)
		count, okc := sampleCount(f.Value)
		if !ok || err != nil || !okc {
			return false
		}
		smp.merge(at, float64(count))
	case strings.HasSuffix(f.Key, "_sum"):
		v, ok := sampleSum(f.Value)
		if !ok {
			return false
		}
		smp.sum = v
	case strings.HasSuffix(f.Key, "_count"):
		v, ok := sampleCount(f.Value)
		if !ok {
			return false
		}
		smp.count = v
	case k == summaryKind:
		q, ok := m.Tag("quantile")
		at, err := strconv.ParseFloat(q, 64)
		v, okv := sampleValue(f.Value)
		if !ok || err != nil || !okv {
			return false
		}
		smp.merge(at, v)
	default:
		return false
	}
	if fresh {
		c.store(fam, key, smp)
	}
	return true
}

// merge sets the bucket or quantile at, replacing one already there.
func (s *sample) merge(at, v float64) {
	for i := range s.bounds {
		if s.bounds[i].at == at {
			s.bounds[i].value = v
			return
		}
	}
	s.bounds = append(s.bounds, bound{at, v})
}

func (c *collection) family(k familyKey) *family {
	fam := c.byKey[k]
	if fam == nil {
		fam = &family{familyKey: k, byLabel: map[string]*sample{}}
		c.byKey[k] = fam
		c.families = append(c.families, fam)
	}
	return fam
}

// store puts smp in fam under key, in the place of the sample it replaces.
func (c *collection) store(fam *family, key string, smp *sample) {
	if old := fam.byLabel[key]; old != nil {
		*old = *smp
		return
	}
	fam.byLabel[key] = smp
	fam.samples = append(fam.samples, smp)
}

// sampleValue, sampleCount and sampleSum convert a field as Telegraf's SampleValue,
// SampleCount and SampleSum do.
func sampleValue(v morse.Value) (float64, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		return v.Float(), true
	case morse.TypeInt:
		return float64(v.Int()), true
	case morse.TypeUint:
		return float64(v.Uint()), true
	case morse.TypeBool:
		if v.Bool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func sampleCount(v morse.Value) (uint64, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		if v.Float() < 0 {
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

func sampleSum(v morse.Value) (float64, bool) {
	if v.Type() == morse.TypeBool {
		return 0, false
	}
	return sampleValue(v)
}
