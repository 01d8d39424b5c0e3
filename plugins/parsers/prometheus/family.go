package prometheus

import (
	"math"
	"strconv"
	"time"

	"github.com/morse-agent/morse"
)

// Type is the type of a metric family, as a TYPE line or the protobuf format gives it.
type Type uint8

// The family types. Gauge histograms (OpenMetrics' "gaugehistogram", which the text
// decoder Telegraf uses also accepts) are read as histograms.
const (
	Untyped Type = iota
	Counter
	Gauge
	Summary
	Histogram
)

// Bucket is one bucket of a histogram: its upper bound (the le label) and the cumulative
// count of observations up to it.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Quantile is one quantile of a summary and its value.
type Quantile struct {
	Quantile float64
	Value    float64
}

// Sample is one series of a family: what Prometheus' data model calls a Metric, its
// label set and its values.
type Sample struct {
	// Labels in exposition order, without le (histograms) and quantile (summaries);
	// labels with an empty value are kept here and left out of the tags.
	Labels []morse.Tag
	// Value of a counter, gauge or untyped sample.
	Value float64
	// Count and Sum of a summary or histogram.
	Count, Sum float64
	Quantiles  []Quantile
	Buckets    []Bucket
	// TimestampMs is the exposition's timestamp in milliseconds; 0 or less means none.
	TimestampMs int64
}

// Family is one metric family: a name, a type and its samples. Its unexported fields
// cache the names Mapping derives from it, so that a Family converted sample by sample,
// as the parser does, derives them once; a Family is used by one goroutine at a time.
type Family struct {
	Name    string
	Type    Type
	Samples []Sample

	countKey, sumKey, bucketKey string    // name_count, name_sum, name_bucket
	bounds                      []float64 // the bounds or quantiles last formatted ...
	boundKeys                   []string  // ... and their text, 'g' formatted
	slab                        *slab     // where its metrics' tags and fields are carved from

	// What the parser knows beyond the above: whether TYPE or a sample fixed the type,
	// whether HELP came, and which sample each label set of a summary or histogram is.
	typed, help bool
	groups      map[string]int
}

// Mapping turns families into metrics as Telegraf's prometheus parser does, so that the
// parser, and the inputs and outputs that read or write Prometheus' model, agree.
//
// With MetricVersion 1, a family is one measurement named after it: a counter, gauge or
// untyped sample has one field, "counter", "gauge" or "value"; a summary has "count",
// "sum" and one field per quantile named after it ("0.5"); a histogram "count", "sum" and
// one field per bucket named after its bound ("0.25", "+Inf").
//
// With MetricVersion 2 (or 0, Telegraf's default for the parser), every metric is
// measurement "prometheus" with a field named after the family: "http_requests_total";
// a summary gives name_count and name_sum, then one metric per quantile with the quantile
// tag; a histogram name_count and name_sum, then one metric per bucket with the le tag,
// and a "+Inf" bucket holding the count when the exposition has none.
//
// Tags are the labels with a value. A counter, gauge or untyped sample whose value is NaN
// gives no metric, as in Telegraf.
type Mapping struct {
	MetricVersion   int
	IgnoreTimestamp bool
}

// Metrics emits the metrics of every sample of f. now is the time of samples without a
// timestamp, or of all when IgnoreTimestamp is set.
func (mp Mapping) Metrics(f *Family, now time.Time, emit func(morse.Metric)) {
	for i := range f.Samples {
		mp.sample(f, &f.Samples[i], now, emit)
	}
}

// sample emits the metrics of one sample of f.
func (mp Mapping) sample(f *Family, s *Sample, now time.Time, emit func(morse.Metric)) {
	if f.slab == nil {
		f.slab = &slab{}
	}
	t := now
	if !mp.IgnoreTimestamp && s.TimestampMs > 0 {
		t = time.UnixMilli(s.TimestampMs)
	}
	if mp.MetricVersion == 1 {
		mp.v1(f, s, t, emit)
	} else {
		mp.v2(f, s, t, emit)
	}
}

// v1 emits a sample as one measurement named after the family.
func (mp Mapping) v1(f *Family, s *Sample, t time.Time, emit func(morse.Metric)) {
	sl := f.slab
	var fields []morse.Field
	switch f.Type {
	case Summary:
		fields = sl.fields(2 + len(s.Quantiles))[:0]
		fields = append(fields, field("count", s.Count), field("sum", s.Sum))
		for i, q := range s.Quantiles {
			if !math.IsNaN(q.Value) {
				fields = setField(fields, f.boundKey(i, q.Quantile), q.Value)
			}
		}
	case Histogram:
		fields = sl.fields(2 + len(s.Buckets))[:0]
		fields = append(fields, field("count", s.Count), field("sum", s.Sum))
		for i, b := range s.Buckets {
			fields = setField(fields, f.boundKey(i, b.UpperBound), b.Count)
		}
	default:
		if math.IsNaN(s.Value) {
			return
		}
		key := "value"
		switch f.Type {
		case Counter:
			key = "counter"
		case Gauge:
			key = "gauge"
		}
		fields = sl.fields(1)
		fields[0] = field(key, s.Value)
	}
	emit(morse.NewMetric(f.Name, labelTags(sl, s.Labels, 0), fields, t))
}

// v2 emits a sample as metrics of measurement "prometheus", one field each.
func (mp Mapping) v2(f *Family, s *Sample, t time.Time, emit func(morse.Metric)) {
	sl := f.slab
	switch f.Type {
	case Summary, Histogram:
		f.keys()
		fields := sl.fields(2)
		fields[0], fields[1] = field(f.countKey, s.Count), field(f.sumKey, s.Sum)
		emit(morse.NewMetric("prometheus", labelTags(sl, s.Labels, 0), fields, t))
		if f.Type == Summary {
			for i, q := range s.Quantiles {
				emit(one(sl, "quantile", f.boundKey(i, q.Quantile), f.Name, q.Value, s.Labels, t))
			}
			return
		}
		inf := false
		for i, b := range s.Buckets {
			emit(one(sl, "le", f.boundKey(i, b.UpperBound), f.bucketKey, b.Count, s.Labels, t))
			inf = inf || math.IsInf(b.UpperBound, 1)
		}
		if !inf {
			emit(one(sl, "le", "+Inf", f.bucketKey, s.Count, s.Labels, t))
		}
	default:
		if math.IsNaN(s.Value) {
			return
		}
		fields := sl.fields(1)
		fields[0] = field(f.Name, s.Value)
		emit(morse.NewMetric("prometheus", labelTags(sl, s.Labels, 0), fields, t))
	}
}

// one builds a version 2 metric of one field with the labels and one more tag.
func one(sl *slab, tagKey, tagValue, key string, v float64, labels []morse.Tag, t time.Time) morse.Metric {
	tags := labelTags(sl, labels, 1)
	tags = append(tags, morse.Tag{Key: tagKey, Value: tagValue})
	fields := sl.fields(1)
	fields[0] = field(key, v)
	return morse.NewMetric("prometheus", tags, fields, t)
}

// labelTags copies the labels that have a value into a new slice with room for extra
// more tags.
func labelTags(sl *slab, labels []morse.Tag, extra int) []morse.Tag {
	n := extra
	for _, l := range labels {
		if l.Value != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	tags := sl.tags(n)[:0]
	for _, l := range labels {
		if l.Value != "" {
			tags = append(tags, l)
		}
	}
	return tags
}

func field(key string, v float64) morse.Field { return morse.Field{Key: key, Value: morse.Float(v)} }

// setField sets key to v, replacing an earlier field of that key as Telegraf's map of
// fields does when two buckets or quantiles have the same bound.
func setField(fields []morse.Field, key string, v float64) []morse.Field {
	for i := range fields {
		if fields[i].Key == key {
			fields[i].Value = morse.Float(v)
			return fields
		}
	}
	return append(fields, field(key, v))
}

// keys derives the version 2 field names of a summary or histogram once.
func (f *Family) keys() {
	if f.countKey == "" {
		f.countKey, f.sumKey, f.bucketKey = f.Name+"_count", f.Name+"_sum", f.Name+"_bucket"
	}
}

// boundKey is the text of the i-th bound or quantile, v, formatted as Telegraf formats
// it ('g', shortest). The samples of a family usually share their bounds, so the text of
// each position is kept and reused while the value there is the same.
func (f *Family) boundKey(i int, v float64) string {
	if i < len(f.bounds) && (f.bounds[i] == v || math.IsNaN(v) && math.IsNaN(f.bounds[i])) {
		return f.boundKeys[i]
	}
	key := strconv.FormatFloat(v, 'g', -1, 64)
	for len(f.bounds) <= i {
		f.bounds = append(f.bounds, 0)
		f.boundKeys = append(f.boundKeys, "")
	}
	f.bounds[i], f.boundKeys[i] = v, key
	return key
}

// slab hands out tag and field slices carved from larger arrays, so that the metrics of
// one payload cost a few allocations rather than two each. The metrics of a payload share
// its arrays, as they share its lifetime in the pipeline. Each slice is capped at its
// length, so that a metric that grows its tags or fields copies them instead of writing
// over its neighbour's.
type slab struct {
	tagBuf   []morse.Tag
	fieldBuf []morse.Field
	size     int
}

// slabMax is the largest array a slab allocates at once; it starts small so that a payload
// of one metric does not pay for a hundred.
const slabMax = 256

func (s *slab) grow(n int) int {
	s.size = min(max(2*s.size, 8), slabMax)
	return max(n, s.size)
}

func (s *slab) tags(n int) []morse.Tag {
	if n > len(s.tagBuf) {
		s.tagBuf = make([]morse.Tag, s.grow(n))
	}
	t := s.tagBuf[:n:n]
	s.tagBuf = s.tagBuf[n:]
	return t
}

func (s *slab) fields(n int) []morse.Field {
	if n > len(s.fieldBuf) {
		s.fieldBuf = make([]morse.Field, s.grow(n))
	}
	f := s.fieldBuf[:n:n]
	s.fieldBuf = s.fieldBuf[n:]
	return f
}
