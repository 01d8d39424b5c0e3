package kafka

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
)

// topic returns the metric as it is to be written and the topic it goes to, as Telegraf
// chooses them: the value of topic_tag when the metric has it (the tag removed with
// exclude_topic_tag), otherwise topic; then the topic_suffix.
func (k *Kafka) topic(m morse.Metric) (morse.Metric, string) {
	topic := k.Topic
	if k.TopicTag != "" {
		if v, ok := tagOf(m, k.TopicTag); ok && v != "" {
			topic = v
			if k.ExcludeTopicTag {
				m = m.WithoutTag(k.TopicTag)
			}
		}
	}
	switch k.TopicSuffix.Method {
	case "measurement":
		return m, topic + k.TopicSuffix.Separator + m.Name()
	case "tags":
		var b strings.Builder
		b.WriteString(topic)
		for _, key := range k.TopicSuffix.Keys {
			if v, _ := tagOf(m, key); v != "" {
				b.WriteString(k.TopicSuffix.Separator)
				b.WriteString(v)
			}
		}
		return m, b.String()
	}
	return m, topic
}

// appendKey appends the message key to buf and reports whether there is one: the value of
// routing_tag, else routing_key, where "random" stands for a new random UUID per message.
// Records with one key go to one partition. A routing tag whose value is empty gives no key
// (a record without a key is spread over the partitions), as in Telegraf.
func (k *Kafka) appendKey(buf []byte, m morse.Metric) ([]byte, bool) {
	if k.RoutingTag != "" {
		if v, ok := tagOf(m, k.RoutingTag); ok {
			return append(buf, v...), v != ""
		}
	}
	switch k.RoutingKey {
	case "":
		return buf, false
	case "random":
		return appendUUID(buf), true
	}
	return append(buf, k.RoutingKey...), true
}

// tagOf returns the value of tag key. For a line metric (morse.NewLineMetric: a listener's
// line kept as text) it reads the value from the text, instead of taking the whole line
// apart as Metric.Tag does, which would cost more than the rest of the write together. In
// that text a backslash always escapes the byte after it.
func tagOf(m morse.Metric, key string) (string, bool) {
	lt, ok := m.Line()
	if !ok {
		return m.Tag(key)
	}
	head, _ := lt.Split()
	if strings.IndexByte(head, '\\') < 0 {
		// Without escapes every comma separates and every equals sign follows a key, so
		// the tag is where ",key=" is.
		for i := 0; ; {
			at := strings.Index(head[i:], key)
			if at < 0 {
				return "", false
			}
			at += i
			end := at + len(key)
			if at > 0 && head[at-1] == ',' && end < len(head) && head[end] == '=' {
				v := head[end+1:]
				if c := strings.IndexByte(v, ','); c >= 0 {
					v = v[:c]
				}
				return v, true
			}
			i = at + 1
		}
	}
	// Skip the measurement; then each tag is ",key=value".
	i := nextUnescaped(head, 0, ',')
	for i < len(head) {
		eq := nextUnescaped(head, i+1, '=')
		end := nextUnescaped(head, eq, ',')
		if eq < len(head) && unescapedEqual(head[i+1:eq], key) {
			return unescape(head[eq+1 : end]), true
		}
		i = end
	}
	return "", false
}

// nextUnescaped returns the index of the first c in s from i on that no backslash escapes,
// or len(s).
func nextUnescaped(s string, i int, c byte) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case c:
			return i
		}
	}
	return len(s)
}

// unescapedEqual reports whether the escaped text reads as s.
func unescapedEqual(escaped, s string) bool {
	if strings.IndexByte(escaped, '\\') < 0 {
		return escaped == s
	}
	return unescape(escaped) == s
}

// unescape drops the backslash of every escape; text without one is returned as it is.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// appendUUID appends a random (version 4) UUID in its text form.
func appendUUID(buf []byte) []byte {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hex[c>>4], hex[c&0xf])
	}
	return buf
}

// timestamp is the record's time: the metric's, unless producer_timestamp = "now" or the
// metric is older than 1970, which Kafka cannot carry; the zero time makes the client use
// the time of the write.
func (k *Kafka) timestamp(m morse.Metric) time.Time {
	if k.ProducerTimestamp == "now" || m.Time().Before(time.Unix(0, 0)) {
		return time.Time{}
	}
	return m.Time()
}

// headers renders the header templates for m. A template that fails leaves its header out,
// as Telegraf does; the error is returned for the caller to log, throttled.
func (k *Kafka) headers(m morse.Metric) ([]kgo.RecordHeader, error) {
	if len(k.headerTmpl) == 0 {
		return nil, nil
	}
	out := make([]kgo.RecordHeader, 0, len(k.headerTmpl))
	var first error
	var b bytes.Buffer
	data := templateMetric{m}
	for _, h := range k.headerTmpl {
		b.Reset()
		if err := h.tmpl.Execute(&b, data); err != nil {
			if first == nil {
				first = fmt.Errorf("header %q: %w", h.name, err)
			}
			continue
		}
		out = append(out, kgo.RecordHeader{Key: h.name, Value: bytes.Clone(b.Bytes())})
	}
	return out, first
}

// templateMetric is what a header template sees: the methods of Telegraf's TemplateMetric, so
// that templates such as '{{ .Name }}-{{ .Tag "host" }}-{{ .Field "value" }}' work unchanged.
type templateMetric struct{ m morse.Metric }

// Name is the measurement name.
func (t templateMetric) Name() string { return t.m.Name() }

// Tag is the value of the tag key, empty when the metric has none.
func (t templateMetric) Tag(key string) string {
	v, _ := t.m.Tag(key)
	return v
}

// Field is the value of the field key, nil when the metric has none.
func (t templateMetric) Field(key string) any {
	v, _ := t.m.Field(key)
	return v.Interface()
}

// Time is the metric's time.
func (t templateMetric) Time() time.Time { return t.m.Time() }

// Tags are the tags as a map.
func (t templateMetric) Tags() map[string]string {
	out := make(map[string]string, len(t.m.Tags()))
	for _, tag := range t.m.Tags() {
		out[tag.Key] = tag.Value
	}
	return out
}

// Fields are the fields as a map.
func (t templateMetric) Fields() map[string]any {
	out := make(map[string]any, len(t.m.Fields()))
	for _, f := range t.m.Fields() {
		out[f.Key] = f.Value.Interface()
	}
	return out
}

// String is the metric as Telegraf's metric prints it: name, tags, fields and time in
// nanoseconds.
func (t templateMetric) String() string {
	return fmt.Sprintf("%s %v %v %d", t.m.Name(), t.Tags(), t.Fields(), t.m.Time().UnixNano())
}
