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
		o.renameFields(e)
	}
	if o.Tag != "" {
		o.tagValues(e)
	}
	if o.TagKey != "" {
		o.renameTags(e)
	}
	if o.Measurement != "" && (o.Measurement == "*" || o.Measurement == e.Name()) {
		e.SetName(o.fn(e.Name()))
	}
}

// fieldKeys and tagKeys append to dst the keys that name selects: every one for "*", else
// name if it is there. The keys are a copy, so the caller may change the fields or tags
// while it loops.
func fieldKeys(e *edit.Editor, dst []string, name string) []string {
	if name == "*" {
		return e.AppendFieldKeys(dst)
	}
	if e.HasField(name) {
		return append(dst, name)
	}
	return dst
}

func tagKeys(e *edit.Editor, dst []string, name string) []string {
	if name == "*" {
		return e.AppendTagKeys(dst)
	}
	if _, ok := e.Tag(name); ok {
		return append(dst, name)
	}
	return dst
}

func (o *Op) dest(key, name string) string {
	if name != "*" && o.Dest != "" {
		return o.Dest
	}
	return key
}

func (o *Op) fieldValues(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range fieldKeys(e, buf[:0], o.Field) {
		if v, _ := e.Field(key); v.Type() == morse.TypeString {
			e.SetField(o.dest(key, o.Field), morse.String(o.fn(v.Str())))
		}
	}
}

// renameFields renames fields. Like Telegraf, it removes the field and adds it again, so a
// renamed field goes last, even when its name did not change; an empty new name leaves the
// field alone.
func (o *Op) renameFields(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range fieldKeys(e, buf[:0], o.FieldKey) {
		if to := o.fn(key); to != "" {
			v, _ := e.Field(key)
			e.RemoveField(key)
			e.SetField(to, v)
		}
	}
}

func (o *Op) tagValues(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range tagKeys(e, buf[:0], o.Tag) {
		v, _ := e.Tag(key)
		e.SetTag(o.dest(key, o.Tag), o.fn(v))
	}
}

func (o *Op) renameTags(e *edit.Editor) {
	var buf edit.KeyBuf
	for _, key := range tagKeys(e, buf[:0], o.TagKey) {
		if to := o.fn(key); to != "" {
			e.RenameTag(key, to)
		}
	}
}
