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

// Series is one measurement with fixed tags and any number of counter fields.
type Series struct {
	measurement string
	tags        []Tag
	mu          sync.Mutex
	fields      map[string]*Counter
	order       []string
}

// Counter returns the named field of the series, creating it at zero.
func (s *Series) Counter(field string) *Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.fields[field]
	if !ok {
		c = &Counter{}
		s.fields[field] = c
		s.order = append(s.order, field)
	}
	return c
}

// Alias makes field report the counter c too, so one count can appear under two names, such
// as Telegraf's name and ours.
func (s *Series) Alias(field string, c *Counter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fields[field]; !ok {
		s.order = append(s.order, field)
	}
	s.fields[field] = c
}

func (s *Series) sample() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := make([]Field, 0, len(s.order))
	for _, f := range s.order {
		fs = append(fs, Field{Key: f, Value: s.fields[f].Get()})
	}
	return Sample{Measurement: s.measurement, Tags: slices.Clone(s.tags), Fields: fs}
}

// Registry holds the series. Each agent has its own, so tests never share counters.
type Registry struct {
	mu     sync.Mutex
	series []*Series
	shared map[string]*Series
}

// New returns an empty registry.
func New() *Registry { return &Registry{shared: map[string]*Series{}} }

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

// NewSeries adds a series of its own for one plugin instance. Two instances with equal tags
// (two outputs of one plugin without an alias) get two series, so that each keeps exact
// counts of its own; they are reported with equal tags, as Telegraf reports them.
func (r *Registry) NewSeries(measurement string, tags map[string]string) *Series {
	s := &Series{measurement: measurement, tags: sortedTags(tags), fields: map[string]*Counter{}}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.series = append(r.series, s)
	return s
}

// Counter returns the field of the one shared series (measurement, tags), creating it at
// zero. It suits agent-wide counters; plugin instances use NewSeries. Callers keep the
// pointer: looking it up is for setup, not for every metric.
func (r *Registry) Counter(measurement string, tags map[string]string, field string) *Counter {
	ts := sortedTags(tags)
	key := seriesKey(measurement, ts)
	r.mu.Lock()
	s, ok := r.shared[key]
	if !ok {
		s = &Series{measurement: measurement, tags: ts, fields: map[string]*Counter{}}
		r.shared[key] = s
		r.series = append(r.series, s)
	}
	r.mu.Unlock()
	return s.Counter(field)
}

// Remove forgets a series, for a plugin that a reload took away.
func (r *Registry) Remove(s *Series) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.series = slices.DeleteFunc(r.series, func(x *Series) bool { return x == s })
	for k, x := range r.shared {
		if x == s {
			delete(r.shared, k)
		}
	}
}

// Snapshot reads every series, in the order they were first created.
func (r *Registry) Snapshot() []Sample {
	r.mu.Lock()
	series := slices.Clone(r.series)
	r.mu.Unlock()
	out := make([]Sample, 0, len(series))
	for _, s := range series {
		out = append(out, s.sample())
	}
	return out
}
