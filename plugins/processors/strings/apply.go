package strings

import (
	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

// apply runs the operation on what it names, in Telegraf's order: field values, field keys,
// tag values, tag keys, then the measurement.
func (o *Op) apply(e *edit.Editor) {
	if o.Field != "" {
		o.fieldValues(e)
	}
	if o.FieldKey != "" {
		o.fieldKeys(e)
	}
	if o.Tag != "" {
		o.tagValues(e)
	}
	if o.TagKey != "" {
		o.tagKeys(e)
	}
	if o.Measurement != "" && (o.Measurement == "*" || o.Measurement == e.Name()) {
		e.SetName(o.fn(e.Name()))
	}
}

// selected returns the keys that name selects among keys: all of them for "*", else name
// if it is there.
func selected(name string, keys []string, has func(string) bool) []string {
	if name == "*" {
		return keys
	}
	if has(name) {
		return []string{name}
	}
	return nil
}

func (o *Op) dest(key, name string) string {
	if name != "*" && o.Dest != "" {
		return o.Dest
	}
	return key
}

func (o *Op) fieldValues(e *edit.Editor) {
	for _, key := range selected(o.Field, e.FieldKeys(), e.HasField) {
		if v, _ := e.Field(key); v.Type() == morse.TypeString {
			e.SetField(o.dest(key, o.Field), morse.String(o.fn(v.Str())))
		}
	}
}

// fieldKeys renames fields. Like Telegraf, it removes the field and adds it again, so a
// renamed field goes last, even when its name did not change; an empty new name leaves the
// field alone.
func (o *Op) fieldKeys(e *edit.Editor) {
	for _, key := range selected(o.FieldKey, e.FieldKeys(), e.HasField) {
		if to := o.fn(key); to != "" {
			v, _ := e.Field(key)
			e.RemoveField(key)
			e.SetField(to, v)
		}
	}
}

func (o *Op) tagValues(e *edit.Editor) {
	has := func(k string) bool { _, ok := e.Tag(k); return ok }
	for _, key := range selected(o.Tag, e.TagKeys(), has) {
		v, _ := e.Tag(key)
		e.SetTag(o.dest(key, o.Tag), o.fn(v))
	}
}

func (o *Op) tagKeys(e *edit.Editor) {
	has := func(k string) bool { _, ok := e.Tag(k); return ok }
	for _, key := range selected(o.TagKey, e.TagKeys(), has) {
		if to := o.fn(key); to != "" {
			e.RenameTag(key, to)
		}
	}
}
