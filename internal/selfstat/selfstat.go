// Package selfstat keeps the agent's own counters and gauges: what each output wrote and
// dropped, what each input gathered. Values are atomics, so the hot path of a metric pays
// one atomic add and never a lock or an allocation.
package selfstat

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter is an int64 that many goroutines may add to. It also serves as a gauge via Set.
type Counter struct{ v atomic.Int64 }

// Add adds n.
func (c *Counter) Add(n int64) { c.v.Add(n) }

// Incr adds one.
func (c *Counter) Incr() { c.v.Add(1) }

// Set replaces the value; gauges use it.
func (c *Counter) Set(n int64) { c.v.Store(n) }

// Get reads the value.
func (c *Counter) Get() int64 { return c.v.Load() }

// Tag is one key/value of a series.
type Tag struct{ Key, Value string }

// Sample is the state of one series at one moment.
type Sample struct {
	Measurement string
	Tags        []Tag // sorted by key
	Fields      []Field
}

// Field is one counter's name and value in a sample.
type Field struct {
	Key   string
	Value int64
}

type series struct {
	measurement string
	tags        []Tag
	fields      map[string]*Counter
	order       []string
}

// Registry holds the series. Each agent has its own, so tests never share counters.
type Registry struct {
	mu     sync.Mutex
	series map[string]*series
	order  []string
}

// New returns an empty registry.
func New() *Registry { return &Registry{series: map[string]*series{}} }

func seriesKey(measurement string, tags []Tag) string {
	var b strings.Builder
	b.WriteString(measurement)
	for _, t := range tags {
		b.WriteByte(0)
		b.WriteString(t.Key)
		b.WriteByte(0)
		b.WriteString(t.Value)
	}
	return b.String()
}

func sortedTags(tags map[string]string) []Tag {
	out := make([]Tag, 0, len(tags))
	for k, v := range tags {
		out = append(out, Tag{k, v})
	}
	slices.SortFunc(out, func(a, b Tag) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Counter returns the counter field of the series (measurement, tags), creating it at zero.
// Callers keep the pointer: looking it up is for setup, not for every metric.
func (r *Registry) Counter(measurement string, tags map[string]string, field string) *Counter {
	ts := sortedTags(tags)
	key := seriesKey(measurement, ts)
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.series[key]
	if !ok {
		s = &series{measurement: measurement, tags: ts, fields: map[string]*Counter{}}
		r.series[key] = s
		r.order = append(r.order, key)
	}
	c, ok := s.fields[field]
	if !ok {
		c = &Counter{}
		s.fields[field] = c
		s.order = append(s.order, field)
	}
	return c
}

// Remove forgets a series, for a plugin that a reload took away.
func (r *Registry) Remove(measurement string, tags map[string]string) {
	key := seriesKey(measurement, sortedTags(tags))
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.series[key]; !ok {
		return
	}
	delete(r.series, key)
	r.order = slices.DeleteFunc(r.order, func(k string) bool { return k == key })
}

// Snapshot reads every series, in the order they were first created.
func (r *Registry) Snapshot() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Sample, 0, len(r.order))
	for _, key := range r.order {
		s := r.series[key]
		fs := make([]Field, 0, len(s.order))
		for _, f := range s.order {
			fs = append(fs, Field{Key: f, Value: s.fields[f].Get()})
		}
		out = append(out, Sample{Measurement: s.measurement, Tags: slices.Clone(s.tags), Fields: fs})
	}
	return out
}
