package json_v2

import (
	"time"

	"github.com/morse-agent/morse"
)

// partial is a metric while it is built: a later value for a key replaces an earlier one,
// as in Telegraf's metrics.
type partial struct {
	tags   []morse.Tag
	fields []morse.Field
	time   time.Time
}

func newPartial(t time.Time) *partial { return &partial{time: t} }

func (m *partial) copy() *partial {
	return &partial{tags: append([]morse.Tag(nil), m.tags...), fields: append([]morse.Field(nil), m.fields...), time: m.time}
}

func (m *partial) addTag(k, v string) {
	for i := range m.tags {
		if m.tags[i].Key == k {
			m.tags[i].Value = v
			return
		}
	}
	m.tags = append(m.tags, morse.Tag{Key: k, Value: v})
}

func (m *partial) addField(k string, v morse.Value) {
	for i := range m.fields {
		if m.fields[i].Key == k {
			m.fields[i].Value = v
			return
		}
	}
	m.fields = append(m.fields, morse.Field{Key: k, Value: v})
}

// merge adds the fields and tags of src to dst, src's winning.
func merge(src, dst *partial) {
	for _, f := range src.fields {
		dst.addField(f.Key, f.Value)
	}
	for _, t := range src.tags {
		dst.addTag(t.Key, t.Value)
	}
}

// product combines each metric of a with each of b (b's values winning); an empty side
// leaves the other as it is.
func product(a, b []*partial) []*partial {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]*partial, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			m := x.copy()
			merge(y, m)
			out = append(out, m)
		}
	}
	return out
}
