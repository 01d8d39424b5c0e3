package iotdb

import (
	"math"
	"strconv"

	"github.com/morse-agent/morse"
)

// row is one metric's values as a tablet takes them: its fields, then with convert_tags_to =
// "fields" its tags, read where the metric holds them rather than copied, each with the
// IoTDB type it goes in as.
type row struct {
	fields []morse.Field
	tags   []morse.Tag // nil unless tags are fields
	types  []dataType  // one per field, then one per tag; 0 for a value left out
	idx    []int       // the column of each value in the tablet it goes to (tablet.match)
	wrap   bool        // uint64_conversion = "int64": an unsigned value past MaxInt64 wraps
}

// len is the number of values, left-out ones included.
func (r *row) len() int { return len(r.types) }

// name is the measurement of value i.
func (r *row) name(i int) string {
	if i < len(r.fields) {
		return r.fields[i].Key
	}
	return r.tags[i-len(r.fields)].Key
}

// set reads m's values into r and returns how many go in: NaN and infinities are left out,
// as JSON has no word for them, and unsigned values go in as uint64_conversion says (IoTDB
// has no unsigned type).
func (r *row) set(m *morse.Metric, s *settings) int {
	r.fields, r.tags, r.wrap = m.Fields(), nil, s.uint64To == "int64"
	if s.tagsAsFields {
		r.tags = m.Tags()
	}
	r.types = r.types[:0]
	n := 0
	for i := range r.fields {
		typ := typeDouble
		switch v := &r.fields[i].Value; v.Type() {
		case morse.TypeFloat:
			if !finite(v.Float()) {
				typ = 0
			}
		case morse.TypeInt:
			typ = typeInt64
		case morse.TypeUint:
			typ = typeInt64
			if s.uint64To == "text" {
				typ = typeText
			}
		case morse.TypeBool:
			typ = typeBoolean
		default:
			typ = typeText
		}
		if typ != 0 {
			n++
		}
		r.types = append(r.types, typ)
	}
	for range r.tags {
		r.types = append(r.types, typeText)
	}
	return n + len(r.tags)
}

// appendJSON appends value i as a JSON value of its type.
func (r *row) appendJSON(b []byte, i int) []byte {
	if i >= len(r.fields) {
		return appendString(b, r.tags[i-len(r.fields)].Value)
	}
	v := &r.fields[i].Value
	switch v.Type() {
	case morse.TypeFloat:
		return appendFloat(b, v.Float())
	case morse.TypeInt:
		return appendInt(b, v.Int())
	case morse.TypeUint:
		u := v.Uint()
		switch {
		case r.types[i] == typeText: // the decimal digits as a string
			b = append(b, '"')
			b = appendUint(b, u)
			return append(b, '"')
		case r.wrap:
			return appendInt(b, int64(u)) // wraps past MaxInt64, as Telegraf's does
		}
		return appendInt(b, int64(min(u, math.MaxInt64)))
	case morse.TypeBool:
		return strconv.AppendBool(b, v.Bool())
	}
	return appendString(b, v.Str())
}
