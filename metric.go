// Package morse is the contract between the morse metrics agent and its plugins: the Metric
// type and its values (line metrics included), the plugin interfaces and their optional
// capabilities, the registry, the error types that decide whether a failed write is retried
// or dropped, the drop reasons, delivery tracking, Secret, Duration and Size. It compiles
// without the engine: the batching writer is package batch, the agent package agent, and
// the TOML loader package config.
package morse

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Tag is one key/value pair that identifies a series.
type Tag struct {
	Key   string
	Value string
}

// Field is one named, typed value of a metric.
type Field struct {
	Key   string
	Value Value
}

// Metric is one point: a measurement name, tags sorted by key, typed fields and a time.
//
// A Metric is a small value. Copies share their tag and field slices, so the pipeline never
// changes those slices in place once a metric has been handed to an Accumulator: every method
// that changes tags or fields writes a fresh slice. That keeps fan-out to several outputs free
// of copies until an output's filter really changes something.
type Metric struct {
	name   string
	tags   []Tag
	fields []Field
	tm     time.Time
	// line, when not empty, holds the name, tags and fields as line-protocol text instead
	// of the three fields above: see NewLineMetric.
	line string
	// aux holds, in the one word that a bool took before, what few metrics need: whether
	// a line metric's text has unsigned integer fields, and the group of a metric that an
	// input tracks (TrackingAccumulator). It is nil for every other metric.
	aux *metricAux
}

// NewMetric builds a metric. It takes ownership of tags and fields: tags are sorted by key in
// place, and a later duplicate key replaces an earlier one. Fields keep their order.
func NewMetric(name string, tags []Tag, fields []Field, t time.Time) Metric {
	if !tagsSorted(tags) {
		sort.SliceStable(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key })
	}
	tags = dedupTags(tags)
	return Metric{name: name, tags: tags, fields: fields, tm: t}
}

// NewMetricFromMaps builds a metric from the map shapes that Telegraf-style code uses. Field
// values of unsupported types are left out; the number left out is returned so that callers
// can count them.
func NewMetricFromMaps(name string, tags map[string]string, fields map[string]any, t time.Time) (Metric, int) {
	ts := make([]Tag, 0, len(tags))
	for k, v := range tags {
		ts = append(ts, Tag{Key: k, Value: v})
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	// Sorting the field keys makes the output of map-built metrics stable, which matters for
	// golden files and for humans comparing two runs.
	sort.Strings(keys)
	fs := make([]Field, 0, len(fields))
	skipped := 0
	for _, k := range keys {
		v, ok := ValueOf(fields[k])
		if !ok {
			skipped++
			continue
		}
		fs = append(fs, Field{Key: k, Value: v})
	}
	return NewMetric(name, ts, fs, t), skipped
}

func tagsSorted(tags []Tag) bool {
	for i := 1; i < len(tags); i++ {
		if tags[i-1].Key > tags[i].Key {
			return false
		}
	}
	return true
}

// dedupTags keeps the last value of each key in a sorted slice.
func dedupTags(tags []Tag) []Tag {
	for i := 1; i < len(tags); i++ {
		if tags[i-1].Key == tags[i].Key {
			out := tags[:i-1]
			for j := i - 1; j < len(tags); j++ {
				if j+1 < len(tags) && tags[j+1].Key == tags[j].Key {
					continue
				}
				out = append(out, tags[j])
			}
			return out
		}
	}
	return tags
}

// Name is the measurement name.
func (m Metric) Name() string {
	if m.line != "" {
		return m.expand().name
	}
	return m.name
}

// Time is the metric's timestamp.
func (m Metric) Time() time.Time { return m.tm }

// Tags returns the tags, sorted by key. The slice is shared and must not be modified.
func (m Metric) Tags() []Tag {
	if m.line != "" {
		return m.expand().tags
	}
	return m.tags
}

// Fields returns the fields. The slice is shared and must not be modified.
func (m Metric) Fields() []Field {
	if m.line != "" {
		return m.expand().fields
	}
	return m.fields
}

// Tag returns the value of tag key and whether it exists.
func (m Metric) Tag(key string) (string, bool) {
	if m.line != "" {
		return lineTag(m.line, key) // a look at the text, not a decode of all of it
	}
	i, ok := slices.BinarySearchFunc(m.tags, key, func(t Tag, k string) int { return strings.Compare(t.Key, k) })
	if !ok {
		return "", false
	}
	return m.tags[i].Value, true
}

// Field returns the value of field key and whether it exists.
func (m Metric) Field(key string) (Value, bool) {
	m = m.expand()
	for _, f := range m.fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return Value{}, false
}

// WithName returns a copy of m with another measurement name.
func (m Metric) WithName(name string) Metric {
	m = m.expand()
	m.name = name
	return m
}

// WithTime returns a copy of m with another timestamp.
func (m Metric) WithTime(t time.Time) Metric {
	m.tm = t
	return m
}

// WithTag returns a copy of m with tag key set to value, keeping the tags sorted.
func (m Metric) WithTag(key, value string) Metric {
	m = m.expand()
	i, found := slices.BinarySearchFunc(m.tags, key, func(t Tag, k string) int { return strings.Compare(t.Key, k) })
	if found && m.tags[i].Value == value {
		return m
	}
	n := len(m.tags)
	if !found {
		n++
	}
	tags := make([]Tag, 0, n)
	tags = append(tags, m.tags[:i]...)
	tags = append(tags, Tag{Key: key, Value: value})
	if found {
		i++
	}
	tags = append(tags, m.tags[i:]...)
	m.tags = tags
	return m
}

// WithoutTag returns a copy of m without tag key.
func (m Metric) WithoutTag(key string) Metric {
	m = m.expand()
	i, found := slices.BinarySearchFunc(m.tags, key, func(t Tag, k string) int { return strings.Compare(t.Key, k) })
	if !found {
		return m
	}
	tags := make([]Tag, 0, len(m.tags)-1)
	tags = append(tags, m.tags[:i]...)
	m.tags = append(tags, m.tags[i+1:]...)
	return m
}

// WithTags returns a copy of m with tags replaced; the caller gives up tags, which are sorted.
func (m Metric) WithTags(tags []Tag) Metric {
	m = m.expand()
	out := NewMetric(m.name, tags, m.fields, m.tm)
	out.aux = m.aux // m is expanded: its aux says nothing of uints
	return out
}

// WithSortedTags returns a copy of m whose tags are replaced by tags, which the caller
// vouches are sorted by key without duplicates, such as a subset of m's own tags. It spares
// WithTags its checks.
func (m Metric) WithSortedTags(tags []Tag) Metric {
	m = m.expand()
	m.tags = tags
	return m
}

// WithFields returns a copy of m whose fields are replaced by fields.
func (m Metric) WithFields(fields []Field) Metric {
	m = m.expand()
	m.fields = fields
	return m
}

// WithField returns a copy of m with field key set to v, replacing an existing field.
func (m Metric) WithField(key string, v Value) Metric {
	m = m.expand()
	fields := make([]Field, 0, len(m.fields)+1)
	replaced := false
	for _, f := range m.fields {
		if f.Key == key {
			f.Value = v
			replaced = true
		}
		fields = append(fields, f)
	}
	if !replaced {
		fields = append(fields, Field{Key: key, Value: v})
	}
	m.fields = fields
	return m
}

// HashID identifies the series of m: its name and tags. Metrics of one series share it.
func (m Metric) HashID() uint64 {
	m = m.expand()
	// FNV-1a, written out so that it does not allocate.
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	mix := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
		h ^= 0xff
		h *= prime
	}
	mix(m.name)
	for _, t := range m.tags {
		mix(t.Key)
		mix(t.Value)
	}
	return h
}

// mergeMissingTags adds the tags of extra (sorted) that have sorted keys not in have. It
// builds a new slice only when something is missing, so metrics that already carry every
// tag cost nothing, and it never writes to have, which other copies may share.
func mergeMissingTags(have, extra []Tag) []Tag {
	if len(extra) == 0 {
		return have
	}
	missing := 0
	for i, j := 0, 0; j < len(extra); {
		switch {
		case i < len(have) && have[i].Key < extra[j].Key:
			i++
		case i < len(have) && have[i].Key == extra[j].Key:
			i, j = i+1, j+1
		default:
			missing, j = missing+1, j+1
		}
	}
	if missing == 0 {
		return have
	}
	out := make([]Tag, 0, len(have)+missing)
	i, j := 0, 0
	for i < len(have) || j < len(extra) {
		switch {
		case j == len(extra) || (i < len(have) && have[i].Key < extra[j].Key):
			out, i = append(out, have[i]), i+1
		case i < len(have) && have[i].Key == extra[j].Key:
			out, i, j = append(out, have[i]), i+1, j+1
		default:
			out, j = append(out, extra[j]), j+1
		}
	}
	return out
}
