package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/morse-agent/morse"
)

// The disk buffer stores a batch of metrics as one record whose payload is
//
//	version byte (1), base time (zigzag varint, Unix ns), then each metric:
//	kind byte: form (low nibble) | time form (high nibble)
//	time: delta from the base (zigzag varint), nothing (zero time), or Unix s and ns (wide)
//	line form: text length (uvarint), the line-protocol text of name, tags and fields
//	fields form: name, tag count, key/value pairs, field count, key/type/value triples;
//	  strings are a uvarint length and bytes, floats 8 bytes, ints zigzag varints, uints
//	  varints, bools the type byte's low bit
//
// A line metric keeps its text as it is, so that it costs no more on disk than on the wire
// less its timestamp; a metric of fields keeps its typed values exactly, which line protocol
// cannot for NaN, empty tags or unsigned integers written as signed. Times are deltas from
// a base per record, so that a batch taken at one moment spends a byte or two on each, and
// so that the metrics from any one on can be cut off into a record of their own (split).
// The time's location is not kept: metrics come back in local time, at the same instant.
const codecVersion = 1

const (
	formLine      = 0
	formLineUints = 1
	formFields    = 2

	timeDelta = 0 << 4
	timeZero  = 1 << 4
	timeWide  = 2 << 4
)

var errCodec = errors.New("disk buffer: undecodable record")

// nanos returns t as Unix nanoseconds when that represents it exactly.
func nanos(t time.Time) (int64, bool) {
	if t.IsZero() {
		return 0, false
	}
	ns := t.UnixNano()
	return ns, time.Unix(0, ns).Equal(t)
}

// appendMetrics encodes ms as one record payload.
func appendMetrics(dst []byte, ms []morse.Metric) []byte {
	var base int64
	for _, m := range ms {
		if ns, ok := nanos(m.Time()); ok {
			base = ns
			break
		}
	}
	dst = append(dst, codecVersion)
	dst = binary.AppendVarint(dst, base)
	for _, m := range ms {
		dst = appendMetric(dst, m, base)
	}
	return dst
}

func appendMetric(dst []byte, m morse.Metric, base int64) []byte {
	t := m.Time()
	ns, exact := nanos(t)
	var kind byte
	switch {
	case t.IsZero():
		kind = timeZero
	case !exact:
		kind = timeWide
	}
	lt, isLine := m.Line()
	switch {
	case isLine && lt.Uints:
		kind |= formLineUints
	case isLine:
		kind |= formLine
	default:
		kind |= formFields
	}
	dst = append(dst, kind)
	switch kind & 0xf0 {
	case timeDelta:
		dst = binary.AppendVarint(dst, ns-base)
	case timeWide:
		dst = binary.AppendVarint(dst, t.Unix())
		dst = binary.AppendUvarint(dst, uint64(t.Nanosecond()))
	}
	if isLine {
		return appendString(dst, lt.Text)
	}
	dst = appendString(dst, m.Name())
	tags := m.Tags()
	dst = binary.AppendUvarint(dst, uint64(len(tags)))
	for _, tg := range tags {
		dst = appendString(appendString(dst, tg.Key), tg.Value)
	}
	fields := m.Fields()
	dst = binary.AppendUvarint(dst, uint64(len(fields)))
	for _, f := range fields {
		dst = appendValue(appendString(dst, f.Key), f.Value)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func appendValue(dst []byte, v morse.Value) []byte {
	switch v.Type() {
	case morse.TypeFloat:
		return binary.LittleEndian.AppendUint64(append(dst, byte(morse.TypeFloat)), math.Float64bits(v.Float()))
	case morse.TypeInt:
		return binary.AppendVarint(append(dst, byte(morse.TypeInt)), v.Int())
	case morse.TypeUint:
		return binary.AppendUvarint(append(dst, byte(morse.TypeUint)), v.Uint())
	case morse.TypeString:
		return appendString(append(dst, byte(morse.TypeString)), v.Str())
	case morse.TypeBool:
		if v.Bool() {
			return append(dst, byte(morse.TypeBool)|0x80)
		}
		return append(dst, byte(morse.TypeBool))
	}
	return append(dst, byte(morse.TypeInvalid))
}

// payloadDecoder reads a record payload. Strings it returns are slices of one string made
// of the whole payload, so a record costs one allocation for all its text.
type payloadDecoder struct {
	s    string
	i    int
	base int64
	err  error
}

func newPayloadDecoder(payload []byte) *payloadDecoder {
	d := &payloadDecoder{s: string(payload)}
	if d.byte() != codecVersion {
		d.fail()
	}
	d.base = d.varint()
	return d
}

func (d *payloadDecoder) fail() {
	if d.err == nil {
		d.err = errCodec
	}
	d.i = len(d.s)
}

func (d *payloadDecoder) byte() byte {
	if d.i >= len(d.s) {
		d.fail()
		return 0
	}
	d.i++
	return d.s[d.i-1]
}

func (d *payloadDecoder) uvarint() uint64 {
	var x uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b := d.byte()
		if d.err != nil {
			return 0
		}
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x
		}
	}
	d.fail()
	return 0
}

func (d *payloadDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *payloadDecoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.i) {
		d.fail()
		return ""
	}
	d.i += int(n)
	return d.s[d.i-int(n) : d.i]
}

func (d *payloadDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.i) { // every element takes at least a byte
		d.fail()
		return 0
	}
	return int(n)
}

// metric decodes the next metric.
func (d *payloadDecoder) metric() morse.Metric {
	kind := d.byte()
	var t time.Time
	switch kind & 0xf0 {
	case timeDelta:
		t = time.Unix(0, d.base+d.varint())
	case timeWide:
		sec := d.varint()
		t = time.Unix(sec, int64(d.uvarint()))
	case timeZero:
	default:
		d.fail()
	}
	switch kind & 0x0f {
	case formLine, formLineUints:
		return morse.NewLineMetric(morse.LineText{Text: d.str(), Uints: kind&0x0f == formLineUints}, t)
	case formFields:
		name := d.str()
		var tags []morse.Tag // nil when empty, as metrics are built
		if n := d.count(); n > 0 {
			tags = make([]morse.Tag, n)
		}
		for i := range tags {
			tags[i] = morse.Tag{Key: d.str(), Value: d.str()}
		}
		var fields []morse.Field
		if n := d.count(); n > 0 {
			fields = make([]morse.Field, n)
		}
		for i := range fields {
			fields[i] = morse.Field{Key: d.str(), Value: d.value()}
		}
		return morse.NewMetric(name, tags, fields, t)
	}
	d.fail()
	return morse.Metric{}
}

func (d *payloadDecoder) value() morse.Value {
	typ := d.byte()
	switch morse.ValueType(typ & 0x7f) {
	case morse.TypeFloat:
		if len(d.s)-d.i < 8 {
			d.fail()
			return morse.Value{}
		}
		var u uint64
		for k := 7; k >= 0; k-- {
			u = u<<8 | uint64(d.s[d.i+k])
		}
		d.i += 8
		return morse.Float(math.Float64frombits(u))
	case morse.TypeInt:
		return morse.Int(d.varint())
	case morse.TypeUint:
		return morse.Uint(d.uvarint())
	case morse.TypeString:
		return morse.String(d.str())
	case morse.TypeBool:
		return morse.Bool(typ&0x80 != 0)
	}
	return morse.Value{}
}

// decodeMetrics appends metrics from up to, not including, to of a payload to dst.
func decodeMetrics(dst []morse.Metric, payload []byte, from, to int) ([]morse.Metric, error) {
	d := newPayloadDecoder(payload)
	for i := 0; i < to && d.err == nil; i++ {
		m := d.metric()
		if i >= from && d.err == nil {
			dst = append(dst, m)
		}
	}
	if d.err != nil {
		return dst, fmt.Errorf("%w: %d metrics, %d bytes", d.err, to, len(payload))
	}
	return dst, nil
}

// splitPayload is the disk queue's SplitFunc: the first n metrics are the payload's prefix
// as it is, and the rest become a payload of their own with the same base time.
func splitPayload(payload []byte, items, n int) (int, []byte, error) {
	d := newPayloadDecoder(payload)
	header := d.i
	for range n {
		d.metric()
	}
	if d.err != nil || n >= items {
		return 0, nil, fmt.Errorf("%w: cannot split %d metrics after %d", errCodec, items, n)
	}
	suffix := make([]byte, 0, header+len(payload)-d.i)
	suffix = append(append(suffix, payload[:header]...), payload[d.i:]...)
	return d.i, suffix, nil
}
