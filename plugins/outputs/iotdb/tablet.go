package iotdb

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// IoTDB's data types, as insertTablet names them.
const (
	typeBoolean = "BOOLEAN"
	typeInt64   = "INT64"
	typeDouble  = "DOUBLE"
	typeText    = "TEXT"
)

// column is one measurement of a tablet: its name, its type and its values so far, written
// as JSON and separated by commas, one per row, null where a row has no value.
type column struct {
	name string
	typ  string
	buf  []byte
	rows int // values written so far, nulls included
}

// tablet is one insertTablet request: the rows of one device, columnar. A row whose value
// has another type than its column already holds goes to the device's next tablet (next),
// so that every value is sent with its own type and IoTDB judges each.
type tablet struct {
	device    string
	ts        []byte
	cols      []column
	ncols     int
	positions []int // the rows' metrics, by position in the batch
	next      int   // the index of the device's next tablet, -1 for none
}

// reset empties t for device, keeping its buffers.
func (t *tablet) reset(device string) {
	t.device, t.ts, t.positions, t.next = device, t.ts[:0], t.positions[:0], -1
	for i := range t.cols[:t.ncols] {
		t.cols[i].buf, t.cols[i].rows = t.cols[i].buf[:0], 0
	}
	t.ncols = 0
}

// find returns the index of the column named name, or -1.
func (t *tablet) find(name string, hint int) int {
	if hint < t.ncols && t.cols[hint].name == name {
		return hint
	}
	for i := range t.cols[:t.ncols] {
		if t.cols[i].name == name {
			return i
		}
	}
	return -1
}

// fits reports whether every value of the row can go into t's columns as it is.
func (t *tablet) fits(vals []value) bool {
	for i, v := range vals {
		if c := t.find(v.name, i); c >= 0 && t.cols[c].typ != v.typ {
			return false
		}
	}
	return true
}

// add appends a row at ts with vals, for the metric at position pos.
func (t *tablet) add(pos int, ts int64, vals []value) {
	row := len(t.positions)
	if row > 0 {
		t.ts = append(t.ts, ',')
	}
	t.ts = strconv.AppendInt(t.ts, ts, 10)
	t.positions = append(t.positions, pos)
	for i, v := range vals {
		c := t.find(v.name, i)
		if c < 0 {
			c = t.addColumn(v.name, v.typ)
		}
		col := &t.cols[c]
		col.pad(row)
		if col.rows > 0 {
			col.buf = append(col.buf, ',')
		}
		col.buf = v.appendJSON(col.buf)
		col.rows++
	}
}

func (t *tablet) addColumn(name, typ string) int {
	if t.ncols == len(t.cols) {
		t.cols = append(t.cols, column{})
	}
	c := &t.cols[t.ncols]
	c.name, c.typ, c.buf, c.rows = name, typ, c.buf[:0], 0
	t.ncols++
	return t.ncols - 1
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

// appendBody appends t's insertTablet body to b.
func (t *tablet) appendBody(b []byte) []byte {
	b = append(b, `{"device":`...)
	b = appendString(b, t.device)
	b = append(b, `,"is_aligned":false,"timestamps":[`...)
	b = append(b, t.ts...)
	b = append(b, `],"measurements":[`...)
	for i := range t.cols[:t.ncols] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, t.cols[i].name)
	}
	b = append(b, `],"data_types":[`...)
	for i := range t.cols[:t.ncols] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, t.cols[i].typ...)
		b = append(b, '"')
	}
	b = append(b, `],"values":[`...)
	rows := len(t.positions)
	for i := range t.cols[:t.ncols] {
		c := &t.cols[i]
		c.pad(rows)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = append(b, c.buf...)
		b = append(b, ']')
	}
	return append(b, "]}"...)
}

// value is one value of a row: its measurement, IoTDB type and the morse value (or a tag's
// text, in str, when convert_tags_to is "fields").
type value struct {
	name string
	typ  string
	v    morse.Value
}

func (v value) appendJSON(b []byte) []byte {
	switch v.v.Type() {
	case morse.TypeFloat:
		return strconv.AppendFloat(b, v.v.Float(), 'g', -1, 64)
	case morse.TypeInt:
		return strconv.AppendInt(b, v.v.Int(), 10)
	case morse.TypeUint: // uint64_conversion = "text": the decimal digits as a string
		b = append(b, '"')
		b = strconv.AppendUint(b, v.v.Uint(), 10)
		return append(b, '"')
	case morse.TypeBool:
		return strconv.AppendBool(b, v.v.Bool())
	}
	return appendString(b, v.v.Str())
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
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
