// Package series holds aggregators' state per series, in the order series first came, with
// a bound on how many series one aggregator keeps.
package series

import (
	"slices"
	"time"

	"github.com/morse-agent/morse"
)

// Entry is the state of one series.
type Entry[T any] struct {
	Name  string
	Tags  []morse.Tag
	Time  time.Time // part of the identity only in a table made with ByTime
	State T
}

// Table maps series to state. It is not safe for concurrent use: aggregators are called
// from one goroutine at a time.
type Table[T any] struct {
	max     int
	byTime  bool
	index   map[uint64][]int // hash → positions in entries; more than one on a collision
	entries []*Entry[T]
	refused int64
}

// New returns a table that keeps at most max series; with byTime, metrics of one series
// but different timestamps are different entries, as merge needs.
func New[T any](max int, byTime bool) *Table[T] {
	return &Table[T]{max: max, byTime: byTime, index: map[uint64][]int{}}
}

// Get returns the entry of m's series, adding one when new. It returns nil, and counts the
// metric as refused, when the series is new and the table is full.
func (t *Table[T]) Get(m morse.Metric) (e *Entry[T], isNew bool) {
	h := t.hash(m)
	for _, i := range t.index[h] {
		if e := t.entries[i]; t.same(e, m) {
			return e, false
		}
	}
	if len(t.entries) >= t.max {
		t.refused++
		return nil, false
	}
	e = &Entry[T]{Name: m.Name(), Tags: m.Tags(), Time: m.Time()}
	t.index[h] = append(t.index[h], len(t.entries))
	t.entries = append(t.entries, e)
	return e, true
}

func (t *Table[T]) hash(m morse.Metric) uint64 {
	h := m.HashID()
	if t.byTime {
		h ^= uint64(m.Time().UnixNano()) * 0x9e3779b97f4a7c15
	}
	return h
}

func (t *Table[T]) same(e *Entry[T], m morse.Metric) bool {
	return e.Name == m.Name() && slices.Equal(e.Tags, m.Tags()) && (!t.byTime || e.Time.Equal(m.Time()))
}

// Entries returns the entries in the order their series first came.
func (t *Table[T]) Entries() []*Entry[T] { return t.entries }

// Len is the number of series kept.
func (t *Table[T]) Len() int { return len(t.entries) }

// Refused returns how many metrics of new series were refused since the last call, and
// starts counting afresh.
func (t *Table[T]) Refused() int64 {
	n := t.refused
	t.refused = 0
	return n
}

// Reset forgets every series.
func (t *Table[T]) Reset() {
	clear(t.index)
	clear(t.entries)
	t.entries = t.entries[:0]
}

// Keep forgets the entries for which keep reports false, keeping the others in order.
func (t *Table[T]) Keep(keep func(*Entry[T]) bool) {
	kept := t.entries[:0]
	for _, e := range t.entries {
		if keep(e) {
			kept = append(kept, e)
		}
	}
	clear(t.entries[len(kept):])
	t.entries = kept
	clear(t.index)
	for i, e := range t.entries {
		h := t.hashEntry(e)
		t.index[h] = append(t.index[h], i)
	}
}

func (t *Table[T]) hashEntry(e *Entry[T]) uint64 {
	return t.hash(morse.NewMetric(e.Name, e.Tags, nil, e.Time))
}

// TagMap returns the entry's tags as a map, the shape Accumulator.AddFields takes.
func (e *Entry[T]) TagMap() map[string]string {
	tags := make(map[string]string, len(e.Tags))
	for _, t := range e.Tags {
		tags[t.Key] = t.Value
	}
	return tags
}

// Number converts a field value as Telegraf's numeric aggregators do: floats, integers and
// unsigned integers count, strings and booleans do not.
func Number(v morse.Value) (float64, bool) {
	switch v.Type() {
	case morse.TypeFloat:
		return v.Float(), true
	case morse.TypeInt:
		return float64(v.Int()), true
	case morse.TypeUint:
		return float64(v.Uint()), true
	}
	return 0, false
}
