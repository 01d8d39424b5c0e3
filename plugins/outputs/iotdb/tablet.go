package iotdb

import (
	"errors"
	"math"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// dataType is an IoTDB data type, as insertTablet names it in typeNames.
type dataType uint8

// The data types morse writes.
const (
	typeBoolean dataType = iota + 1
	typeInt64
	typeDouble
	typeText
)

var typeNames = [...]string{typeBoolean: "BOOLEAN", typeInt64: "INT64", typeDouble: "DOUBLE", typeText: "TEXT"}

// column is one measurement of a tablet: its name, its type and its values so far, written
// as JSON and separated by commas, one per row, null where a row has no value. A column
// outlives the batch that made it (see builder), so that the next batch finds it where it
// was; one that gets no value in a batch is left out of that batch's body.
type column struct {
	name string
	typ  dataType
	buf  []byte
	rows int // values written so far in this batch, nulls included
	vals int // values other than null in this batch
}

// tablet is one insertTablet request: the rows of one device, columnar. A row whose value
// has another type than its column already holds in this batch goes to the device's next
// tablet (next), so that every value is sent with its own type and IoTDB judges each.
type tablet struct {
	device    string
	ts        []byte
	cols      []column
	positions []int // the rows' metrics, by position in the batch
	next      int   // the index of the device's next tablet, -1 for none
	gen       uint64
}

// reset empties t for the batch gen, keeping its device, its columns' names and types, and
// its buffers.
func (t *tablet) reset(gen uint64) {
	t.ts, t.positions, t.gen = t.ts[:0], t.positions[:0], gen
	for i := range t.cols {
		t.cols[i].buf, t.cols[i].rows, t.cols[i].vals = t.cols[i].buf[:0], 0, 0
	}
}

// find returns the index of the column named name, or -1. Rows of a device mostly have
// their fields in the same order, so the column at the field's position (hint) is tried
// first.
func (t *tablet) find(name string, hint int) int {
	if hint < len(t.cols) && sameName(t.cols[hint].name, name) {
		return hint
	}
	for i := range t.cols {
		if sameName(t.cols[i].name, name) {
			return i
		}
	}
	return -1
}

// match finds the column of each value of r into r.idx (-1 for a column t lacks) and
// reports whether every value can go into t as it is: its column is new, holds the same
// type, or holds nothing yet in this batch.
func (t *tablet) match(r *row) bool {
	for i, typ := range r.types {
		if typ == 0 {
			continue
		}
		c := t.find(r.name(i), i)
		r.idx[i] = c
		if c >= 0 && t.cols[c].vals > 0 && t.cols[c].typ != typ {
			return false
		}
	}
	return true
}

// add appends the row r at ts, whose columns match found, for the metric at position pos.
// A second value of one measurement in a row is left out: a column has one value a row.
func (t *tablet) add(pos int, ts int64, r *row) {
	n := len(t.positions)
	if n > 0 {
		t.ts = append(t.ts, ',')
	}
	t.ts = appendInt(t.ts, ts)
	t.positions = append(t.positions, pos)
	for i, typ := range r.types {
		if typ == 0 {
			continue
		}
		c := r.idx[i]
		if c < 0 {
			if c = t.find(r.name(i), i); c < 0 { // else a duplicate key made it since match
				c = t.addColumn(r.name(i), typ)
			}
		}
		col := &t.cols[c]
		if col.rows > n {
			continue
		}
		col.typ = typ
		if col.rows < n {
			col.pad(n)
		}
		if n > 0 {
			col.buf = append(col.buf, ',')
		}
		col.buf = r.appendJSON(col.buf, i)
		col.rows++
		col.vals++
	}
}

func (t *tablet) addColumn(name string, typ dataType) int {
	// A clone: the name may be a substring of a line metric's text (lineDecoder), which
	// the column, kept from batch to batch, must not keep alive.
	t.cols = append(t.cols, column{name: strings.Clone(name), typ: typ})
	return len(t.cols) - 1
}

// pad writes nulls up to row n.
func (c *column) pad(n int) {
	for c.rows < n {
		if c.rows > 0 {
			c.buf = append(c.buf, ',')
		}
		c.buf = append(c.buf, "null"...)
		c.rows++
	}
}

// appendBody appends t's insertTablet body to b: the columns with a value in this batch.
func (t *tablet) appendBody(b []byte) []byte {
	b = append(b, `{"device":`...)
	b = appendString(b, t.device)
	b = append(b, `,"is_aligned":false,"timestamps":[`...)
	b = append(b, t.ts...)
	b = append(b, `],"measurements":[`...)
	sep := false
	for i := range t.cols {
		if t.cols[i].vals > 0 {
			b = appendSep(b, &sep)
			b = appendString(b, t.cols[i].name)
		}
	}
	b = append(b, `],"data_types":[`...)
	sep = false
	for i := range t.cols {
		if t.cols[i].vals > 0 {
			b = appendSep(b, &sep)
			b = append(b, '"')
			b = append(b, typeNames[t.cols[i].typ]...)
			b = append(b, '"')
		}
	}
	b = append(b, `],"values":[`...)
	rows := len(t.positions)
	sep = false
	for i := range t.cols {
		c := &t.cols[i]
		if c.vals == 0 {
			continue
		}
		c.pad(rows)
		b = appendSep(b, &sep)
		b = append(b, '[')
		b = append(b, c.buf...)
		b = append(b, ']')
	}
	return append(b, "]}"...)
}

// appendSep appends a comma before every item but the first.
func appendSep(b []byte, sep *bool) []byte {
	if *sep {
		b = append(b, ',')
	}
	*sep = true
	return b
}

// errNoValues is the error of a metric with no value IoTDB can store: all its fields are
// NaN or infinite, which JSON cannot carry.
var errNoValues = errors.New("no field has a value IoTDB can store (NaN and infinities are left out)")

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json
// writes it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// finite reports whether f is a number JSON can carry.
// NaN and the infinities are the floats whose exponent bits are all set.
func finite(f float64) bool { return math.Float64bits(f)&expMask != expMask }

const expMask = 0x7ff << 52

// sameName is a == b for the short names of measurements. Names that a parser made are never
// the same string as a column's, so == would call the runtime's memequal for every value of
// a row; names of 8 to 16 bytes are compared here as two words, the rest by ==.
func sameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	if n := len(a); n >= 8 && n <= 16 {
		pa, pb := unsafe.Pointer(unsafe.StringData(a)), unsafe.Pointer(unsafe.StringData(b))
		return *(*uint64)(pa) == *(*uint64)(pb) &&
			*(*uint64)(unsafe.Add(pa, n-8)) == *(*uint64)(unsafe.Add(pb, n-8))
	}
	return a == b
}
