package influx

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/morse-agent/morse"
)

// unsafeString views b as a string for the duration of a strconv call, which copies what it
// keeps, so that parsing a number does not allocate.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func isRange(err error) bool { return errors.Is(err, strconv.ErrRange) }

// Reasons for values, in InfluxDB 1.x's words.
var (
	errInvalidNumber  = &ParseError{Reason: "invalid number"}
	errInvalidBoolean = &ParseError{Reason: "invalid boolean"}
	errInvalidFloat   = &ParseError{Reason: "invalid float"}
)

// convert parses a field value that is not a string.
func convert(kind lineprotocol.ValueKind, b []byte) (morse.Value, error) {
	switch kind {
	case lineprotocol.Int:
		n, err := parseInt(b)
		if err != nil {
			return morse.Value{}, numberError("integer", b, err)
		}
		return morse.Int(n), nil
	case lineprotocol.Uint:
		n, err := parseUint(b)
		if err != nil {
			return morse.Value{}, numberError("unsigned", b, err)
		}
		return morse.Uint(n), nil
	case lineprotocol.Float:
		return convertFloat(b)
	case lineprotocol.Bool:
		switch unsafeString(b) {
		case "t", "T", "true", "True", "TRUE":
			return morse.Bool(true), nil
		case "f", "F", "false", "False", "FALSE":
			return morse.Bool(false), nil
		}
		return morse.Value{}, errInvalidBoolean
	}
	return morse.Value{}, errInvalidNumber
}

// convertFloat accepts decimal floats only. strconv also reads hexadecimal floats, "Inf" and
// underscores, which InfluxDB refuses; refusing them here too keeps the listener from
// accepting lines that the database behind it would not.
func convertFloat(b []byte) (morse.Value, error) {
	if f, ok := parseSimpleFloat(b); ok {
		return morse.Float(f), nil
	}
	for _, c := range b {
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return morse.Value{}, errInvalidNumber
		}
	}
	f, err := strconv.ParseFloat(unsafeString(b), 64)
	if err != nil {
		if isRange(err) {
			return morse.Value{}, errInvalidFloat
		}
		return morse.Value{}, errInvalidNumber
	}
	return morse.Float(f), nil
}

// numberError words an integer that does not parse the way InfluxDB 1.x does.
func numberError(typ string, b []byte, err error) error {
	if isRange(err) {
		return &ParseError{Reason: fmt.Sprintf("unable to parse %s %s: %v", typ, b, err)}
	}
	return errInvalidNumber
}

// context returns the byte at a decoder error's position within the entry text, and the byte
// before it; -1 stands for "none" (before the start or past the end). lineDelta is the line
// of the error counted from the entry's first line, column is 1-based.
func context(text []byte, lineDelta, column int) (at, before int) {
	off := 0
	for ; lineDelta > 0; lineDelta-- {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 {
			return -1, -1
		}
		off += i + 1
	}
	off += column - 1
	at, before = -1, -1
	if off >= 0 && off < len(text) {
		at = int(text[off])
	}
	if off-1 >= 0 && off-1 < len(text) {
		before = int(text[off-1])
	}
	return at, before
}

// reason maps a line-protocol/v2 decoder message to InfluxDB 1.x's words. The decoder's
// messages differ from InfluxDB's in where they draw lines between cases, so some are told
// apart by the byte at the error (at) and the one before it (before). A message that maps to
// nothing is kept as it is, so that no detail is lost.
func reason(msg string, at, before int) string {
	eol := at == '\n' || at == '\r' || at < 0
	switch {
	case strings.HasPrefix(msg, "no measurement name found"):
		return "missing measurement"
	case strings.HasSuffix(msg, "found at start of measurement name") && at == ',':
		return "missing measurement"
	case strings.HasPrefix(msg, "expected tag key after comma"):
		return "missing tag key"
	case msg == "empty tag name":
		if at < 0 {
			return "missing fields"
		}
		return "missing tag value"
	case strings.HasPrefix(msg, "expected tag key or field but found"):
		return tagKeyReason(msg, at, before, eol)
	case strings.HasPrefix(msg, "expected '=' after tag key"),
		strings.HasPrefix(msg, "expected tag value after tag key"):
		return "missing tag value"
	case strings.HasPrefix(msg, "expected field key but none found"):
		return fieldsReason(before)
	case strings.HasSuffix(msg, "found at start of field key"):
		switch {
		case at == '=':
			return "missing field key"
		case eol:
			return fieldsReason(before)
		case at == ',' || at == ' ':
			return "invalid field format"
		}
	case strings.HasPrefix(msg, "want '=' after field key"),
		strings.HasPrefix(msg, "unexpected character"):
		return "invalid field format"
	case strings.HasPrefix(msg, "expected field value"):
		return "missing field value"
	case strings.HasPrefix(msg, "expected closing quote"):
		return "unbalanced quotes"
	case strings.HasPrefix(msg, "field value has unrecognized type"):
		return valueReason(at, eol)
	case strings.HasPrefix(msg, "invalid timestamp"):
		return "bad timestamp"
	case strings.HasPrefix(msg, "unexpected text after timestamp"):
		return "point is invalid"
	}
	return msg
}

// tagKeyReason words an empty tag key: the line ended after the measurement or a tag value
// (missing fields), a comma was followed by '=' (missing tag key), or a tag value held an
// unescaped '=' (invalid tag format).
func tagKeyReason(msg string, at, before int, eol bool) string {
	switch {
	case eol:
		return "missing fields"
	case at == '=' && before == ',':
		return "missing tag key"
	case at == '=':
		return "invalid tag format"
	}
	return msg
}

// fieldsReason words a field set that ends where a key should start: after a comma the field
// set is malformed, otherwise there is none.
func fieldsReason(before int) string {
	if before == ',' {
		return "invalid field format"
	}
	return "missing fields"
}

// valueReason words a field value that starts with no known type's character. InfluxDB 1.x
// reads such a value as a boolean, except an empty one and one starting like "NaN".
func valueReason(at int, eol bool) string {
	switch {
	case eol || at == ',' || at == ' ':
		return "missing field value"
	case at == 'N' || at == 'n':
		return "invalid number"
	}
	return "invalid boolean"
}
