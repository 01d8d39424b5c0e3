package csv

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// rowWriter appends one CSV row: fields separated by sep, quoted as encoding/csv quotes
// them, and "\n".
type rowWriter struct {
	dst []byte
	sep byte
	n   int
}

// begin starts a field and returns the buffer to append it to; raw ends it.
func (w *rowWriter) begin() []byte {
	if w.n > 0 {
		w.dst = append(w.dst, w.sep)
	}
	w.n++
	return w.dst
}

func (w *rowWriter) raw(dst []byte) { w.dst = dst }

func (w *rowWriter) field(s string) { w.dst = appendQuotedIfNeeded(w.begin(), s, w.sep) }

func (w *rowWriter) prefixed(prefix bool, p, key string) {
	if prefix {
		key = p + key
	}
	w.field(key)
}

// value writes a field value as Telegraf's internal.ToString does; a missing value (the
// zero Value) is an empty column.
func (w *rowWriter) value(v morse.Value) {
	dst := w.begin()
	switch v.Type() {
	case morse.TypeFloat:
		dst = strconv.AppendFloat(dst, v.Float(), 'f', -1, 64)
	case morse.TypeInt:
		dst = strconv.AppendInt(dst, v.Int(), 10)
	case morse.TypeUint:
		dst = strconv.AppendUint(dst, v.Uint(), 10)
	case morse.TypeBool:
		dst = strconv.AppendBool(dst, v.Bool())
	case morse.TypeString:
		dst = appendQuotedIfNeeded(dst, v.Str(), w.sep)
	}
	w.dst = dst
}

func (w *rowWriter) end() []byte { return append(w.dst, '\n') }

// appendQuotedIfNeeded writes s as encoding/csv's Writer does: in quotes, with quotes
// doubled, when it holds the separator, a quote, a CR or LF, starts with white space, or is
// `\.`.
func appendQuotedIfNeeded(dst []byte, s string, sep byte) []byte {
	if !needsQuotes(s, sep) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, '"')
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, '"')
}

func needsQuotes(s string, sep byte) bool {
	if s == "" {
		return false
	}
	if s == `\.` {
		return true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\n' || c == '\r' || c == '"' || c == sep {
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(s) // encoding/csv quotes a field that starts with space
	return unicode.IsSpace(r)
}

// maxStackFields is how many fields are put in key order without allocating.
const maxStackFields = 64

// forSorted calls f with each field in ascending key order, copying only the positions,
// and only onto the stack for up to maxStackFields fields.
func forSorted(fields []morse.Field, f func(morse.Field)) {
	cmp := func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) }
	if slices.IsSortedFunc(fields, cmp) {
		for _, fl := range fields {
			f(fl)
		}
		return
	}
	var stack [maxStackFields]uint16
	order := stack[:0]
	if len(fields) > maxStackFields {
		order = make([]uint16, 0, len(fields))
	}
	for i := range fields {
		order = append(order, uint16(i))
	}
	slices.SortStableFunc(order, func(a, b uint16) int { return strings.Compare(fields[a].Key, fields[b].Key) })
	for _, i := range order {
		f(fields[i])
	}
}
