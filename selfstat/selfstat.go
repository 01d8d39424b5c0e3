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
// A counter made by Series.Timing is a timing instead: see there.
type Counter struct {
	v atomic.Int64
	// tee, when set, receives every Add too: an agent-wide total fed by per-plugin counters.
	tee    atomic.Pointer[Counter]
	timing *timing
}

// Add adds n; for a timing, it records one duration of n nanoseconds.
func (c *Counter) Add(n int64) {
	if c.timing != nil {
		c.timing.add(n)
	} else {
		c.v.Add(n)
	}
	if t := c.tee.Load(); t != nil {
		t.Add(n)
	}
}

// Incr adds one.
func (c *Counter) Incr() { c.Add(1) }

// Set replaces the value; gauges use it. For a timing, it records one duration, as
// Telegraf's timing stats do.
func (c *Counter) Set(n int64) {
	if c.timing != nil {
		c.timing.add(n)
		return
	}
	c.v.Store(n)
}

// Get reads the value. For a timing it is the mean of the durations recorded since the last
// report, or the last reported mean when none were; reading it does not start a new period.
func (c *Counter) Get() int64 {
	if c.timing != nil {
		return c.timing.mean(false)
	}
	return c.v.Load()
}

// Tee makes every later Add of c add to total too, so that a per-plugin counter feeds an
// agent-wide one (internal_agent) without the hot path knowing of it. A nil total stops it.
func (c *Counter) Tee(total *Counter) { c.tee.Store(total) }

// report reads the value for a sample; a timing starts a new period.
func (c *Counter) report() int64 {
	if c.timing != nil {
		return c.timing.mean(true)
	}
	return c.v.Load()
}

// timing is Telegraf's timing stat: each report gives the mean of the durations recorded
// since the previous report, and repeats the previous mean when there were none, so that a
// gather time reads as "how long one gather takes" rather than a sum that only grows. Timings
// are recorded once per gather or write, never per metric, so a lock costs nothing here and
// keeps sum and count consistent.
type timing struct {
	mu       sync.Mutex
	sum, n   int64
	lastMean int64
}

func (t *timing) add(d int64) {
	t.mu.Lock()
	t.sum += d
	t.n++
	t.mu.Unlock()
}

func (t *timing) mean(reset bool) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return t.lastMean
	}
	m := t.sum / t.n
	if reset {
		t.lastMean, t.sum, t.n = m, 0, 0
	}
	return m
}

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

// Timing returns the named field of the series as a timing (see timing), creating it. A
// field first made by Counter stays a counter.
func (s *Series) Timing(field string) *Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.fields[field]
	if !ok {
		c = &Counter{timing: &timing{}}
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
		fs = append(fs, Field{Key: f, Value: s.fields[f].report()})
	}
	return Sample{Measurement: s.measurement, Tags: slices.Clone(s.tags), Fields: fs}
}

// Registry holds the series. Each agent has its own, so tests never share counters.
type Registry struct {
	mu      sync.Mutex
	series  []*Series
	shared  map[string]*Series
	version atomic.Pointer[string]
}

// IDTag is the tag that tells apart two instances of one plugin, as Telegraf's "_id" does.
// inputs.internal reports it only with per_instance; otherwise it sums the series that
// differ in it alone.
const IDTag = "_id"

// SetVersion records the agent's version, which inputs.internal adds to every series as
// the "version" tag, as Telegraf does.
func (r *Registry) SetVersion(v string) { r.version.Store(&v) }

// Version is the version SetVersion recorded, or "unknown" (Telegraf's word for a build
// without one).
func (r *Registry) Version() string {
	if v := r.version.Load(); v != nil && *v != "" {
		return *v
	}
	return "unknown"
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
