package questdb

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/morse-agent/morse"
)

// Before a metric is sent it is checked against what QuestDB 9.1.0 refuses or would store
// as something else, each rule observed on a real server. Over HTTP this saves a round trip;
// over TCP it is the only way to keep such a metric from costing its batch-mates, because
// QuestDB then closes the connection without a word, and the lines after it are lost.
//
//   - Table names (measurements): not empty, at most max_name_len characters and
//     maxNameBytes bytes, no '.' first, last or twice in a row, none of
//     \n \r ? , ' " \ / : ) ( + * % ~, no byte below 0x10, no DEL, no U+FEFF.
//   - Column names (tag and field keys): the same, and also no '.' and no '-' anywhere.
//   - Two columns of one metric (tags and fields) whose names differ at most in case:
//     QuestDB's names ignore case, and it would keep the first and silently drop the other
//     (a tag and a field with one key among them).
//   - Unsigned integers above math.MaxInt64: a LONG cannot hold them. Those within range
//     are written as signed integers (QuestDB 9.1.0 refuses the `u` suffix).
//   - math.MinInt64: QuestDB's NULL for a LONG; it would read back as NULL.
//   - A timestamp before 1970-01-01: QuestDB refuses a designated timestamp before it.
//
// Each is a permanent refusal of the one metric, counted under invalid_name or
// unsupported_value. QuestDB itself converts a boolean written to a LONG or DOUBLE column
// to 1 or 0; that is the server's rule, applied to the column's existing type.

// DefaultMaxNameLen is QuestDB's default cairo.max.file.name.length.
const DefaultMaxNameLen = 127

// maxNameBytes bounds a name in UTF-8 bytes. QuestDB counts max_name_len in characters, but
// a name becomes a file or directory name, with a suffix (".d", "~12", a version), and file
// systems allow 255 bytes: 90 CJK characters (270 bytes) passed QuestDB 9.1.0's own check,
// then failed with a 500 "could not open read-write" on every attempt.
const maxNameBytes = 200

// nameKind selects the rules of validName.
type nameKind uint8

const (
	tableName nameKind = iota
	columnName
)

// refused marks, per byte, what QuestDB refuses anywhere in a table name (bit tableName) or
// a column name (bit columnName); '.' is special in table names and checked apart.
var refused = func() (r [256]uint8) {
	for c := 0; c < 0x10; c++ {
		r[c] = 1<<tableName | 1<<columnName
	}
	for _, c := range []byte("?,'\"\\/:)(+*%~\x7f") {
		r[c] = 1<<tableName | 1<<columnName
	}
	r['-'] |= 1 << columnName
	r['.'] |= 1 << columnName
	return r
}()

// validName reports whether QuestDB takes s as a table or column name. With escaped, s is
// line-protocol text whose backslashes escape the byte after them, and the rules apply to
// the bytes it stands for.
func validName(kind nameKind, s string, escaped bool, maxLen int) bool {
	if s == "" {
		return false
	}
	bit := uint8(1) << kind
	chars, last := 0, len(s)-1
	var prev byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && escaped && i < last {
			i++
			c = s[i]
		}
		switch {
		case refused[c]&bit != 0:
			return false
		case c < 0x80:
			if c == '.' && (chars == 0 || i == last || prev == '.') {
				return false // only tables get here with a '.'
			}
		case c == 0xEF && i+2 < len(s) && s[i+1] == 0xBB && s[i+2] == 0xBF: // U+FEFF
			return false
		case c&0xC0 == 0x80: // a UTF-8 continuation byte: not a new character
			chars--
		}
		chars++
		prev = c
	}
	return chars <= maxLen && len(s) <= maxNameBytes
}

var (
	errUintRange   = errors.New("unsigned integer above 9223372036854775807 does not fit QuestDB's LONG")
	errMinInt      = errors.New("-9223372036854775808 is QuestDB's NULL for a LONG")
	errBeforeEpoch = errors.New("QuestDB refuses a designated timestamp before 1970-01-01")
)

// checkMetric returns why QuestDB cannot take m as it is, or nil. keys is scratch space.
func checkMetric(m morse.Metric, maxLen int, keys *[]string) *LineError {
	if t := m.Time(); !t.IsZero() && t.UnixNano() < 0 {
		return &LineError{Reason: ReasonUnsupportedValue, Err: errBeforeEpoch}
	}
	if lt, ok := m.Line(); ok {
		return checkLineText(lt, maxLen, keys)
	}
	if name := m.Name(); !validName(tableName, name, false, maxLen) {
		return invalidName("table", name)
	}
	*keys = (*keys)[:0]
	for _, t := range m.Tags() {
		if t.Key == "" || t.Value == "" {
			continue // the serializer leaves it out
		}
		if !validName(columnName, t.Key, false, maxLen) {
			return invalidName("tag", t.Key)
		}
		if e := addColumn(keys, t.Key); e != nil {
			return e
		}
	}
	for _, f := range m.Fields() {
		if !validName(columnName, f.Key, false, maxLen) {
			return invalidName("field", f.Key)
		}
		if e := addColumn(keys, f.Key); e != nil {
			return e
		}
		if err := checkValue(f.Value); err != nil {
			return valueError(f.Key, err)
		}
	}
	return nil
}

func checkValue(v morse.Value) error {
	switch {
	case v.Type() == morse.TypeUint && v.Uint() > math.MaxInt64:
		return errUintRange
	case v.Type() == morse.TypeInt && v.Int() == math.MinInt64:
		return errMinInt
	}
	return nil
}

// addColumn adds a column name to those of the metric so far, refusing one that QuestDB,
// whose names ignore case, would take for one of them. The names are valid ones, so there
// is nothing to unescape in line text. Names of different lengths are told apart without
// folding: it runs on every metric whose shape differs from the one before.
func addColumn(keys *[]string, key string) *LineError {
	for _, k := range *keys {
		if len(k) == len(key) && strings.EqualFold(k, key) {
			return &LineError{Reason: ReasonInvalidName, Err: fmt.Errorf("columns %q and %q are one column to QuestDB, whose names ignore case", k, key)}
		}
	}
	*keys = append(*keys, key)
	return nil
}

func valueError(key string, err error) *LineError {
	return &LineError{Reason: ReasonUnsupportedValue, Err: fmt.Errorf("field %q: %w", key, err)}
}

func invalidName(what, name string) *LineError {
	return &LineError{Reason: ReasonInvalidName, Err: fmt.Errorf("QuestDB refuses %s name %q", what, name)}
}

// checkLineText is checkMetric for a line metric's text, read without expanding it. The
// text follows morse.NewLineMetric's contract: a backslash escapes the byte after it, and a
// string value is quoted, with only \" and \\ escaped.
func checkLineText(lt morse.LineText, maxLen int, keys *[]string) *LineError {
	head, fields := lt.Split()
	name, tags := splitUnescaped(head, ',')
	if !validName(tableName, name, true, maxLen) {
		return invalidName("table", name)
	}
	*keys = (*keys)[:0]
	for tags != "" {
		var tag string
		tag, tags = splitUnescaped(tags[1:], ',') // tags starts with the comma before a key
		key, _ := splitUnescaped(tag, '=')
		if !validName(columnName, key, true, maxLen) {
			return invalidName("tag", key)
		}
		if e := addColumn(keys, key); e != nil {
			return e
		}
	}
	for fields != "" {
		key, rest := splitUnescaped(fields, '=')
		if !validName(columnName, key, true, maxLen) {
			return invalidName("field", key)
		}
		if e := addColumn(keys, key); e != nil {
			return e
		}
		value, next := fieldValue(rest[min(1, len(rest)):])
		if err := checkValueText(value, lt.Uints); err != nil {
			return valueError(key, err)
		}
		fields = next
	}
	return nil
}

// splitUnescaped cuts s before its first c that no backslash escapes: the part before it,
// and the rest from c on (empty when there is no such c).
//
// It searches with strings.IndexByte, which reads many bytes a step, since most text holds no
// backslash: a c with no backslash before it is the one.
func splitUnescaped(s string, c byte) (string, string) {
	for from := 0; from < len(s); {
		i := strings.IndexByte(s[from:], c)
		if i < 0 {
			i = len(s)
		} else {
			i += from
		}
		b := strings.IndexByte(s[from:i], '\\')
		if b < 0 {
			return s[:i], s[i:]
		}
		from += b + 2 // past the backslash and the byte it escapes
	}
	return s, ""
}

// fieldValue reads the value at the start of s, a field set after a key's equals sign, and
// returns it and the field set after its comma.
func fieldValue(s string) (value, rest string) {
	end := 0
	if strings.HasPrefix(s, `"`) {
		for end = 1; end < len(s) && s[end] != '"'; end++ {
			if s[end] == '\\' {
				end++
			}
		}
		end = min(end+1, len(s))
	} else if end = strings.IndexByte(s, ','); end < 0 {
		end = len(s)
	}
	value, rest = s[:end], s[end:]
	if rest != "" {
		rest = rest[1:]
	}
	return value, rest
}

// minInt64Digits is math.MinInt64 without its sign, and maxInt64Digits math.MaxInt64.
const (
	minInt64Digits = "9223372036854775808"
	maxInt64Digits = "9223372036854775807"
)

// checkValueText applies checkValue to a value as written in line protocol.
func checkValueText(v string, uints bool) error {
	if len(v) < 2 {
		return nil
	}
	switch v[len(v)-1] {
	case 'u':
		if uints && digitsAbove(v[:len(v)-1], maxInt64Digits) {
			return errUintRange
		}
	case 'i':
		if v[0] == '-' && digitsEqual(v[1:len(v)-1], minInt64Digits) {
			return errMinInt
		}
	}
	return nil
}

// digitsAbove reports whether the decimal digits d stand for a number above limit, which
// has no leading zero. Longer runs of significant digits are larger numbers, and runs of
// equal length compare as text, so nothing is converted.
func digitsAbove(d, limit string) bool {
	d = strings.TrimLeft(d, "0")
	return len(d) > len(limit) || len(d) == len(limit) && d > limit
}

func digitsEqual(d, limit string) bool { return strings.TrimLeft(d, "0") == limit }
