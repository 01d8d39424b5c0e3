// Package edit gives processors a working copy of a metric that they can change step by step
// with the semantics of Telegraf's mutable metric, and turns it back into an immutable
// morse.Metric at the end.
//
// morse metrics are values whose tag and field slices are shared by every copy, so each
// WithTag or WithField writes a new slice. A processor that renames three fields would then
// build three field slices for one metric. An Editor copies the tags and the fields at most
// once each, on their first change, and changes the copies in place after that; a metric that
// no step changes comes back as it went in, without any copy.
package edit

import (
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Editor is the working copy of one metric. The zero value is not ready; use Start.
// An Editor is meant to live on its processor's stack for one metric.
type Editor struct {
	orig   morse.Metric
	name   string
	tags   []morse.Tag
	fields []morse.Field
	tm     time.Time

	nameChanged, timeChanged bool
	tagsOwned, fieldsOwned   bool
}

// Start returns an editor for m. A line metric is expanded once here, so that the steps
// that follow read its name, tags and fields without decoding the text again.
func Start(m morse.Metric) Editor {
	m = m.Expanded()
	return Editor{orig: m, name: m.Name(), tags: m.Tags(), fields: m.Fields(), tm: m.Time()}
}

// Metric returns the edited metric: m itself (expanded) when nothing changed.
func (e *Editor) Metric() morse.Metric {
	m := e.orig
	if e.nameChanged {
		m = m.WithName(e.name)
	}
	if e.timeChanged {
		m = m.WithTime(e.tm)
	}
	if e.tagsOwned {
		m = m.WithSortedTags(e.tags)
	}
	if e.fieldsOwned {
		m = m.WithFields(e.fields)
	}
	return m
}

// Changed reports whether any step changed the metric.
func (e *Editor) Changed() bool {
	return e.nameChanged || e.timeChanged || e.tagsOwned || e.fieldsOwned
}

// Name is the current measurement name.
func (e *Editor) Name() string { return e.name }

// SetName changes the measurement name.
func (e *Editor) SetName(name string) {
	if name != e.name {
		e.name, e.nameChanged = name, true
	}
}

// Time is the current timestamp.
func (e *Editor) Time() time.Time { return e.tm }

// SetTime changes the timestamp.
func (e *Editor) SetTime(t time.Time) { e.tm, e.timeChanged = t, true }

// Tags returns the current tags, sorted by key. The slice must not be modified, and a later
// change to the tags may reuse it, so callers that change tags while looping take a copy
// (see TagKeys).
func (e *Editor) Tags() []morse.Tag { return e.tags }

// AppendTagKeys appends the keys of the current tags to dst, for loops that change tags.
// A caller that passes a small array on its stack, as most do, allocates nothing.
func (e *Editor) AppendTagKeys(dst []string) []string {
	for _, t := range e.tags {
		dst = append(dst, t.Key)
	}
	return dst
}

func (e *Editor) findTag(key string) (int, bool) {
	return slices.BinarySearchFunc(e.tags, key, func(t morse.Tag, k string) int { return strings.Compare(t.Key, k) })
}

// Tag returns the value of tag key.
func (e *Editor) Tag(key string) (string, bool) {
	if i, ok := e.findTag(key); ok {
		return e.tags[i].Value, true
	}
	return "", false
}

func (e *Editor) ownTags(extra int) {
	if !e.tagsOwned {
		e.tags = append(make([]morse.Tag, 0, len(e.tags)+extra), e.tags...)
		e.tagsOwned = true
	}
}

// SetTag sets tag key to value, adding it in key order when it is new, as Telegraf's
// AddTag does.
func (e *Editor) SetTag(key, value string) {
	i, ok := e.findTag(key)
	if ok {
		if e.tags[i].Value == value {
			return
		}
		e.ownTags(0)
		e.tags[i].Value = value
		return
	}
	e.ownTags(1)
	e.tags = slices.Insert(e.tags, i, morse.Tag{Key: key, Value: value})
}

// RemoveTag removes tag key if it exists.
func (e *Editor) RemoveTag(key string) {
	i, ok := e.findTag(key)
	if !ok {
		return
	}
	e.ownTags(0)
	e.tags = slices.Delete(e.tags, i, i+1)
}

// RenameTag gives tag from the key to, replacing a tag named to. It reports false when
// there is no tag from.
func (e *Editor) RenameTag(from, to string) bool {
	v, ok := e.Tag(from)
	if !ok {
		return false
	}
	if from != to {
		e.RemoveTag(from)
		e.SetTag(to, v)
	}
	return true
}

// Fields returns the current fields in their order. The same caveats as for Tags apply.
func (e *Editor) Fields() []morse.Field { return e.fields }

// AppendFieldKeys appends the keys of the current fields to dst, as AppendTagKeys does.
func (e *Editor) AppendFieldKeys(dst []string) []string {
	for _, f := range e.fields {
		dst = append(dst, f.Key)
	}
	return dst
}

// KeyBuf is a key buffer for AppendTagKeys and AppendFieldKeys that metrics with up to 16
// tags or fields do not outgrow.
type KeyBuf [16]string

func (e *Editor) findField(key string) int {
	for i := range e.fields {
		if e.fields[i].Key == key {
			return i
		}
	}
	return -1
}

// Field returns the value of field key.
func (e *Editor) Field(key string) (morse.Value, bool) {
	if i := e.findField(key); i >= 0 {
		return e.fields[i].Value, true
	}
	return morse.Value{}, false
}

// HasField reports whether field key exists.
func (e *Editor) HasField(key string) bool { return e.findField(key) >= 0 }

func (e *Editor) ownFields(extra int) {
	if !e.fieldsOwned {
		e.fields = append(make([]morse.Field, 0, len(e.fields)+extra), e.fields...)
		e.fieldsOwned = true
	}
}

// SetField sets field key to v. An existing field keeps its place, a new one goes last, as
// with Telegraf's AddField.
func (e *Editor) SetField(key string, v morse.Value) {
	if i := e.findField(key); i >= 0 {
		if e.fields[i].Value == v {
			return
		}
		e.ownFields(0)
		e.fields[i].Value = v
		return
	}
	e.ownFields(1)
	e.fields = append(e.fields, morse.Field{Key: key, Value: v})
}

// RemoveField removes field key if it exists; the others keep their order.
func (e *Editor) RemoveField(key string) {
	i := e.findField(key)
	if i < 0 {
		return
	}
	e.ownFields(0)
	e.fields = slices.Delete(e.fields, i, i+1)
}

// MoveField removes field key and adds it again, last, with value v. This is Telegraf's
// RemoveField followed by AddField, which several processors use to write a result, and the
// field order it gives is theirs.
func (e *Editor) MoveField(key string, v morse.Value) {
	e.RemoveField(key)
	e.SetField(key, v)
}

// RenameFieldInPlace changes the key of field from to to, keeping its place. The caller
// makes sure that no field named to exists.
func (e *Editor) RenameFieldInPlace(from, to string) {
	i := e.findField(from)
	if i < 0 || from == to {
		return
	}
	e.ownFields(0)
	e.fields[i].Key = to
}
