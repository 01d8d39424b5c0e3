package morse

import (
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// A metric can travel as the line-protocol text it arrived in. A listener that receives a
// flood of line protocol spends most of its time building names, tags and typed fields that
// nothing reads: with no filter, no added tag and outputs that write line protocol, the
// output only turns them back into the text they came from. A line metric skips both steps.
// It holds the entry's text; every method that reads or changes the name, tags or fields
// expands it first, so code that does not know about line metrics still sees a plain one.
// The pipeline keeps the text only where nothing would look inside (see LineWriter and
// LineAccumulator).

// LineText is the text of a line metric (see NewLineMetric).
type LineText struct {
	// Text is the measurement, tags and fields of one line-protocol entry, without its
	// timestamp and line ending.
	Text string
	// Uints reports whether a field is an unsigned integer (`123u`). An output that writes
	// unsigned integers as signed ones must then rewrite those fields.
	Uints bool
}

// NewLineMetric returns a metric held as text, with time t.
//
// The caller vouches for the text. It must be an entry that InfluxDB 1.x and morse's parser
// (plugins/parsers/influx) both read to the same metric: a backslash only before a character
// that it escapes, no duplicate tag keys, and no backslash in a string field other than `\"`
// and `\\`. The influx parser checks all of this before it makes one. Text that does not
// decode expands to a metric with no fields, which outputs refuse and count as dropped.
func NewLineMetric(lt LineText, t time.Time) Metric {
	m := Metric{line: lt.Text, tm: t}
	if lt.Uints {
		m.aux = &auxUints
	}
	return m
}

// Line returns the text of a metric held as line protocol (see NewLineMetric) and true, or
// false for a metric held as name, tags and fields.
func (m Metric) Line() (LineText, bool) {
	return LineText{Text: m.line, Uints: m.aux != nil && m.aux.uints}, m.line != ""
}

// Expanded returns m held as name, tags and fields. A metric that already is comes back as
// it was.
func (m Metric) Expanded() Metric { return m.expand() }

// expand decodes a line metric. It allocates on every call, so the pipeline expands a metric
// once, where it first needs to, and passes on the expanded copy.
func (m Metric) expand() Metric {
	if m.line == "" {
		return m
	}
	name, tags, fields := decodeLine(m.line)
	out := NewMetric(name, tags, fields, m.tm)
	if g := m.group(); g != nil {
		out.aux = &g.plain
	}
	return out
}

// decodeLine reads the name, tags and fields of an entry. It stops at the first error and
// returns what it read; NewLineMetric's callers have already refused text with errors.
func decodeLine(text string) (string, []Tag, []Field) {
	dec := lineprotocol.NewDecoderWithBytes([]byte(text))
	if !dec.Next() {
		return "", nil, nil
	}
	raw, err := dec.Measurement()
	if err != nil {
		return "", nil, nil
	}
	name := string(raw)
	var tags []Tag
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			return name, nil, nil
		}
		if k == nil {
			break
		}
		tags = append(tags, Tag{Key: string(k), Value: string(v)})
	}
	var fields []Field
	for {
		k, v, err := dec.NextField()
		if err != nil {
			return name, tags, nil
		}
		if k == nil {
			break
		}
		if val, ok := lineValue(v); ok {
			fields = append(fields, Field{Key: string(k), Value: val})
		}
	}
	return name, tags, fields
}

// lineValue converts a decoded field value.
func lineValue(v lineprotocol.Value) (Value, bool) {
	switch v.Kind() {
	case lineprotocol.Int:
		return Int(v.IntV()), true
	case lineprotocol.Uint:
		return Uint(v.UintV()), true
	case lineprotocol.Float:
		return Float(v.FloatV()), true
	case lineprotocol.String:
		return String(v.StringV()), true
	case lineprotocol.Bool:
		return Bool(v.BoolV()), true
	}
	return Value{}, false
}

// LineWriter is implemented by outputs that write a line metric's text as it is (see
// NewLineMetric), when WritesLines reports true given their options. Every other output
// gets line metrics expanded.
type LineWriter interface {
	WritesLines() bool
}

// LineAccumulator is implemented by the agent's accumulators. PrefersLines reports whether
// metrics held as line-protocol text would mostly reach the outputs as they are, so that a
// line-protocol listener may hand them over unparsed. The answer can change when the agent
// reloads; an accumulator expands any line metric it cannot pass on, so a stale answer costs
// speed, never a metric.
type LineAccumulator interface {
	PrefersLines() bool
}
