package iotdb

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// The output takes line metrics as the listeners made them (morse.LineWriter): expanding one
// builds a string for every name, key and value, and a slice of tags and one of fields, a
// dozen allocations a line that the garbage collector then has to find. lineDecoder reads
// the text into slices it keeps from line to line, and its names and values are substrings
// of the text: only a token with an escape in it costs a string of its own.

// WritesLines tells the agent to hand line metrics over as they are: the output reads their
// text itself (lineDecoder).
func (o *IoTDB) WritesLines() bool { return true }

// lineDecoder decodes the text of line metrics into tags and fields it reuses.
type lineDecoder struct {
	tags   []morse.Tag
	fields []morse.Field
}

// decode returns the metric that the line text stands for, at t, its tags and fields in the
// decoder's slices: it is good until the next call. ok is false for text that does not
// decode, which the caller then expands as morse does.
//
// The text is NewLineMetric's: a measurement, its tags and its fields, in which a backslash
// always escapes the byte after it and a string field escapes only `"` and `\`.
func (d *lineDecoder) decode(text string, t time.Time) (m morse.Metric, ok bool) {
	d.tags, d.fields = d.tags[:0], d.fields[:0]
	i, name := token(text, 0, stopValue)
	for i < len(text) && text[i] == ',' {
		var k, v string
		if i, k = token(text, i+1, stopKey); i >= len(text) || text[i] != '=' {
			return m, false
		}
		i, v = token(text, i+1, stopValue)
		d.tags = append(d.tags, morse.Tag{Key: k, Value: v})
	}
	if i >= len(text) || text[i] != ' ' {
		return m, false
	}
	for sep := byte(' '); sep != 0; {
		if i >= len(text) || text[i] != sep {
			return m, false
		}
		var k string
		if i, k = token(text, i+1, stopKey); i >= len(text) || text[i] != '=' {
			return m, false
		}
		v, end, ok := fieldValue(text, i+1)
		if !ok {
			return m, false
		}
		d.fields = append(d.fields, morse.Field{Key: k, Value: v})
		if i, sep = end, 0; i < len(text) {
			sep = ','
		}
	}
	if !slices.IsSortedFunc(d.tags, byKey) {
		slices.SortStableFunc(d.tags, byKey) // as NewMetric would, without its allocations
	}
	return morse.NewMetric(name, d.tags, d.fields, t), len(d.fields) > 0
}

func byKey(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) }

// The bytes that end a token: a name or tag value at a comma or space, a key also at an
// equals sign. A backslash is in both, so that the scan stops at escapes too.
var (
	stopValue = stopSet(", \\")
	stopKey   = stopSet("=, \\")
)

func stopSet(stops string) (t *[256]bool) {
	t = new([256]bool)
	for i := range len(stops) {
		t[stops[i]] = true
	}
	return t
}

// token reads from i up to the first byte of stops that no backslash escapes, and returns
// where it stopped and the token, unescaped.
func token(s string, i int, stops *[256]bool) (int, string) {
	start, escaped := i, false
	for ; i < len(s); i++ {
		c := s[i]
		if !stops[c] {
			continue
		}
		if c != '\\' {
			break
		}
		if i+1 < len(s) {
			i++
			escaped = true
		}
	}
	if !escaped {
		return i, s[start:i]
	}
	return i, unescape(s[start:i])
}

// unescape drops the backslash of every escape.
func unescape(s string) string {
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

// fieldValue reads the field value at i: a string in quotes, or a number or boolean up to
// the next comma. It returns the value and where it ended.
func fieldValue(s string, i int) (morse.Value, int, bool) {
	if i < len(s) && s[i] == '"' {
		return quoted(s, i+1)
	}
	end := i
	for end < len(s) && s[end] != ',' {
		end++
	}
	raw := s[i:end]
	if raw == "" {
		return morse.Value{}, end, false
	}
	switch raw[len(raw)-1] {
	case 'i':
		n, err := strconv.ParseInt(raw[:len(raw)-1], 10, 64)
		return morse.Int(n), end, err == nil
	case 'u':
		n, err := strconv.ParseUint(raw[:len(raw)-1], 10, 64)
		return morse.Uint(n), end, err == nil
	}
	switch raw {
	case "t", "T", "true", "True", "TRUE":
		return morse.Bool(true), end, true
	case "f", "F", "false", "False", "FALSE":
		return morse.Bool(false), end, true
	}
	f, err := strconv.ParseFloat(raw, 64)
	return morse.Float(f), end, err == nil
}

// quoted reads a string field from i, just after its opening quote, up to its closing one.
func quoted(s string, i int) (morse.Value, int, bool) {
	start, escaped := i, false
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
				i++
				escaped = true
			}
		case '"':
			v := s[start:i]
			if escaped {
				v = unescape(v)
			}
			return morse.String(v), i + 1, true
		}
	}
	return morse.Value{}, i, false
}
