// Package msgpack writes metrics as MessagePack in Telegraf's shape: one map per metric,
//
//	{"name": "cpu", "time": <timestamp extension -1>, "tags": {"host": "a"}, "fields": {"usage": 1.5}}
//
// with the time in MessagePack's official timestamp extension (4, 8 or 12 bytes, as small as
// the value allows). A batch is the maps one after another.
//
// MessagePack has distinct signed, unsigned and float encodings, so a round trip keeps every
// type as long as the writer uses them faithfully. This serializer does: floats are float
// 64, signed integers use the positive or negative fixint or an int 8/16/32/64 encoding, and
// unsigned integers always an uint 8/16/32/64 encoding, even when small. Telegraf writes an
// unsigned integer up to 127 as a positive fixint, which morse's parser
// (plugins/parsers/msgpack) reads as signed. NaN and infinities are written as they are.
// Strings are written byte for byte, valid UTF-8 or not.
//
// The Serializer appends to a caller's buffer and does not allocate.
package msgpack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/morse-agent/morse"
)

// ErrNoFields means that the metric has no field with a value; such a metric is refused
// wrapped in a *morse.PermanentError with Reason morse.ReasonSerialize.
var ErrNoFields = errors.New("no field can be written")

// timeExt is the MessagePack timestamp extension type.
const timeExt = 0xff // -1

// Serializer encodes metrics as MessagePack. It has no state, so one Serializer may be used
// by many goroutines at once.
type Serializer struct{}

// New returns a Serializer. MessagePack has no options, in Telegraf as here.
func New() *Serializer { return &Serializer{} }

// AppendMetric appends m to dst as one MessagePack map.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	m = m.Expanded()
	fields := m.Fields()
	n := 0
	for _, f := range fields {
		if f.Value.Type() != morse.TypeInvalid {
			n++
		}
	}
	if n == 0 {
		return dst, morse.Permanent(morse.ReasonSerialize, fmt.Errorf("msgpack: measurement %q: %w", m.Name(), ErrNoFields))
	}
	dst = append(dst, msgpcode.FixedMapLow|4)
	dst = appendString(dst, "name")
	dst = appendString(dst, m.Name())
	dst = appendString(dst, "time")
	dst = AppendTime(dst, m.Time())
	dst = appendString(dst, "tags")
	tags := m.Tags()
	dst = appendMapLen(dst, len(tags))
	for _, t := range tags {
		dst = appendString(dst, t.Key)
		dst = appendString(dst, t.Value)
	}
	dst = appendString(dst, "fields")
	dst = appendMapLen(dst, n)
	for _, f := range fields {
		if f.Value.Type() != morse.TypeInvalid {
			dst = appendString(dst, f.Key)
			dst = appendValue(dst, f.Value)
		}
	}
	return dst, nil
}

// AppendBatch appends every metric of batch; those that cannot be written are left out and
// counted in dropped.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) (out []byte, dropped int) {
	for _, m := range batch {
		var err error
		if dst, err = s.AppendMetric(dst, m); err != nil {
			dropped++
		}
	}
	return dst, dropped
}

func appendValue(dst []byte, v morse.Value) []byte {
	switch v.Type() {
	case morse.TypeFloat:
		dst = append(dst, msgpcode.Double)
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(v.Float()))
	case morse.TypeInt:
		return AppendInt(dst, v.Int())
	case morse.TypeUint:
		return AppendUint(dst, v.Uint())
	case morse.TypeString:
		return appendString(dst, v.Str())
	}
	if v.Bool() {
		return append(dst, msgpcode.True)
	}
	return append(dst, msgpcode.False)
}

// AppendInt writes a signed integer in its smallest signed encoding: a fixint from -32 to
// 127, otherwise int 8, 16, 32 or 64.
func AppendInt(dst []byte, n int64) []byte {
	switch {
	case n >= -32 && n <= math.MaxInt8:
		return append(dst, byte(n))
	case n >= math.MinInt8 && n <= math.MaxInt8:
		return append(dst, msgpcode.Int8, byte(n))
	case n >= math.MinInt16 && n <= math.MaxInt16:
		return binary.BigEndian.AppendUint16(append(dst, msgpcode.Int16), uint16(n))
	case n >= math.MinInt32 && n <= math.MaxInt32:
		return binary.BigEndian.AppendUint32(append(dst, msgpcode.Int32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, msgpcode.Int64), uint64(n))
}

// AppendUint writes an unsigned integer in its smallest unsigned encoding, uint 8 to 64;
// never as a fixint, which readers take for a signed integer.
func AppendUint(dst []byte, n uint64) []byte {
	switch {
	case n <= math.MaxUint8:
		return append(dst, msgpcode.Uint8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, msgpcode.Uint16), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, msgpcode.Uint32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, msgpcode.Uint64), n)
}

// AppendTime writes t in the timestamp extension: 32 bits for whole seconds from 1970 to
// 2106, 64 bits for seconds with nanoseconds up to 2514, 96 bits for any other time.
func AppendTime(dst []byte, t time.Time) []byte {
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	if sec >= 0 && sec < 1<<34 {
		data := nsec<<34 | uint64(sec)
		if data>>32 == 0 {
			return binary.BigEndian.AppendUint32(append(dst, msgpcode.FixExt4, timeExt), uint32(data))
		}
		return binary.BigEndian.AppendUint64(append(dst, msgpcode.FixExt8, timeExt), data)
	}
	dst = append(dst, msgpcode.Ext8, 12, timeExt)
	dst = binary.BigEndian.AppendUint32(dst, uint32(nsec))
	return binary.BigEndian.AppendUint64(dst, uint64(sec))
}

func appendString(dst []byte, s string) []byte {
	switch n := len(s); {
	case n <= int(msgpcode.FixedStrMask):
		dst = append(dst, msgpcode.FixedStrLow|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, msgpcode.Str8, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, msgpcode.Str16), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, msgpcode.Str32), uint32(n))
	}
	return append(dst, s...)
}

func appendMapLen(dst []byte, n int) []byte {
	switch {
	case n <= int(msgpcode.FixedMapMask):
		return append(dst, msgpcode.FixedMapLow|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, msgpcode.Map16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, msgpcode.Map32), uint32(n))
}
