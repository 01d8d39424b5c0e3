package statsd

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
)

// cache holds the interval's aggregates, each keyed by its measurement and tags, so that
// the fields of one series (several template fields, or a counter's) make one metric. Its
// strings are copies: nothing in it keeps a packet alive.
type cache struct {
	mu         sync.Mutex
	counters   map[string]*entry[int64]
	gauges     map[string]*entry[float64]
	sets       map[string]*entry[map[string]struct{}]
	timings    map[string]*entry[*runningStats]
	lastGather time.Time
}

// entry is one series of one kind: its fields by name, and when it expires under max_ttl.
type entry[V any] struct {
	name    string
	tags    []morse.Tag
	fields  map[string]V
	expires time.Time
}

func (c *cache) init(now time.Time) {
	c.counters = map[string]*entry[int64]{}
	c.gauges = map[string]*entry[float64]{}
	c.sets = map[string]*entry[map[string]struct{}]{}
	c.timings = map[string]*entry[*runningStats]{}
	c.lastGather = now
}

// started is the previous Gather's time in RFC 3339, the start_time of what arrives now.
func (c *cache) started() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastGather.Format(time.RFC3339)
}

// find returns the entry of smp in m, making it with copies of smp's strings when absent.
// The lookup with a converted byte slice does not allocate.
func find[V any](m map[string]*entry[V], key []byte, smp *sample) *entry[V] {
	if e, ok := m[string(key)]; ok {
		return e
	}
	e := &entry[V]{name: strings.Clone(smp.name), tags: cloneTags(smp.tags), fields: map[string]V{}}
	m[string(key)] = e
	return e
}

// add aggregates samples, with Telegraf's semantics: counters add up, a gauge takes the
// last value or moves by a +/- delta, a set counts distinct members, and a timing or
// histogram takes each value 1/rate times when a sample rate is given.
func (c *cache) add(s *Statsd, samples []sample, key *[]byte) {
	var expires time.Time
	if s.MaxTTL > 0 {
		expires = s.now().Add(time.Duration(s.MaxTTL))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range samples {
		smp := &samples[i]
		*key = appendKey((*key)[:0], smp)
		switch smp.kind {
		case kindCounter:
			e := find(c.counters, *key, smp)
			e.fields[field(e.fields, smp.field)] += smp.ival
			e.expires = expires
		case kindGauge:
			e := find(c.gauges, *key, smp)
			f := field(e.fields, smp.field)
			if smp.additive {
				e.fields[f] += smp.fval
			} else {
				e.fields[f] = smp.fval
			}
			e.expires = expires
		case kindSet:
			e := find(c.sets, *key, smp)
			f := field(e.fields, smp.field)
			members := e.fields[f]
			if members == nil {
				members = map[string]struct{}{}
				e.fields[f] = members
			}
			if _, ok := members[smp.sval]; !ok {
				members[strings.Clone(smp.sval)] = struct{}{}
			}
			e.expires = expires
		case kindTiming, kindHistogram:
			e := find(c.timings, *key, smp)
			f := field(e.fields, smp.field)
			rs := e.fields[f]
			if rs == nil {
				rs = newRunningStats(s.PercentileLimit)
				e.fields[f] = rs
			}
			n := int64(1)
			if smp.rate > 0 && smp.rate < 1 {
				n = int64(1 / smp.rate)
			}
			rs.addN(smp.fval, n)
			e.expires = expires
		}
	}
}

// field returns the map's own copy of name when it has one, so that a new field is the
// only one whose name is copied.
func field[V any](m map[string]V, name string) string {
	if _, ok := m[name]; ok {
		return name
	}
	return strings.Clone(name)
}

// gather builds the interval's metrics at now, then clears what the delete_* options say
// and forgets what max_ttl says.
func (c *cache) gather(s *Statsd, now time.Time) []morse.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	var start string
	if s.EnableAggregationTemporality {
		start = c.lastGather.Format(time.RFC3339)
	}
	out := make([]morse.Metric, 0, len(c.timings)+len(c.gauges)+len(c.counters)+len(c.sets))
	for _, e := range c.timings {
		out = append(out, metricOf(e, now, start, s.timingFields(e.fields)))
	}
	for _, e := range c.gauges {
		out = append(out, metricOf(e, now, start, fieldsOf(e.fields, morse.Float)))
	}
	for _, e := range c.counters {
		if s.FloatCounters {
			out = append(out, metricOf(e, now, start, fieldsOf(e.fields, func(v int64) morse.Value { return morse.Float(float64(v)) })))
		} else {
			out = append(out, metricOf(e, now, start, fieldsOf(e.fields, morse.Int)))
		}
	}
	for _, e := range c.sets {
		out = append(out, metricOf(e, now, start, fieldsOf(e.fields, func(v map[string]struct{}) morse.Value {
			if s.FloatSets {
				return morse.Float(float64(len(v)))
			}
			return morse.Int(int64(len(v)))
		})))
	}
	if s.DeleteTimings {
		clear(c.timings)
	}
	if s.DeleteGauges {
		clear(c.gauges)
	}
	if s.DeleteCounters {
		clear(c.counters)
	}
	if s.DeleteSets {
		clear(c.sets)
	}
	if s.MaxTTL > 0 {
		expire(c.timings, now)
		expire(c.gauges, now)
		expire(c.counters, now)
		expire(c.sets, now)
	}
	c.lastGather = now
	return out
}

func expire[V any](m map[string]*entry[V], now time.Time) {
	maps.DeleteFunc(m, func(_ string, e *entry[V]) bool { return now.After(e.expires) })
}

// metricOf builds the metric of e with fields, and start_time when start is set. The
// entry's tags are shared: no one changes a metric's tags in place.
func metricOf[V any](e *entry[V], now time.Time, start string, fields []morse.Field) morse.Metric {
	if start != "" {
		fields = append(fields, morse.Field{Key: "start_time", Value: morse.String(start)})
	}
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	return morse.NewMetric(e.name, e.tags, fields, now)
}

func fieldsOf[V any](m map[string]V, val func(V) morse.Value) []morse.Field {
	out := make([]morse.Field, 0, len(m)+1)
	for k, v := range m {
		out = append(out, morse.Field{Key: k, Value: val(v)})
	}
	return out
}

// timingFields are Telegraf's fields of a timing or histogram: for the field "value" mean,
// median, stddev, sum, upper, lower, count and "<p>_percentile"; for any other field the
// same, each prefixed with the field's name and "_".
func (s *Statsd) timingFields(m map[string]*runningStats) []morse.Field {
	out := make([]morse.Field, 0, len(m)*(7+len(s.percKey))+1)
	for name, rs := range m {
		prefix := ""
		if name != "value" {
			prefix = name + "_"
		}
		count := morse.Int(rs.n)
		if s.FloatTimings {
			count = morse.Float(float64(rs.n))
		}
		out = append(out,
			morse.Field{Key: prefix + "mean", Value: morse.Float(rs.mean())},
			morse.Field{Key: prefix + "median", Value: morse.Float(rs.median())},
			morse.Field{Key: prefix + "stddev", Value: morse.Float(rs.stddev())},
			morse.Field{Key: prefix + "sum", Value: morse.Float(rs.sum)},
			morse.Field{Key: prefix + "upper", Value: morse.Float(rs.upper)},
			morse.Field{Key: prefix + "lower", Value: morse.Float(rs.lower)},
			morse.Field{Key: prefix + "count", Value: count})
		for i, p := range s.Percentiles {
			out = append(out, morse.Field{Key: prefix + s.percKey[i], Value: morse.Float(rs.percentile(p))})
		}
	}
	return out
}
