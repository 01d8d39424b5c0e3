package influx

import "unicode/utf8"

// replacement is U+FFFD encoded as UTF-8. It stands in for bytes that line protocol cannot
// carry in a name, key or value.
const replacement = "\uFFFD"

// keyClass records, for every byte, what writing it in a measurement, tag key, tag value or
// field key needs.
type keyClass uint8

const (
	plain       keyClass = iota // written as it is
	escape                      // written as a backslash and the byte itself
	escapeInKey                 // '=': escaped in keys and tag values, plain in measurements
	whitespace                  // \t \n \f \r: written as a backslash and a letter
	control                     // another control byte: replaced by U+FFFD
	nonASCII                    // a byte of a UTF-8 sequence: validated
)

// keyFlags are one bit per class, so that one pass of ORs over a key tells which kinds of
// bytes it holds. The common key holds none, and is then copied as it is.
const (
	flagEscape = 1 << iota
	flagEquals
	flagAlter // whitespace or control: the key reads back differently
	flagNonASCII
)

// keyTable says how each byte of a measurement, tag key, tag value or field key is written.
type keyTable struct {
	classes [256]keyClass
	flags   [256]uint8
}

// influxKeys writes keys as InfluxDB and Telegraf do: a backslash escapes only a comma, a
// space or an equals sign, and is otherwise the byte itself.
var influxKeys = newKeyTable(false)

// backslashKeys writes keys for a reader that takes every backslash as escaping the byte
// after it, as QuestDB does (observed on 9.1.0: `a\tb` is stored as "atb", `C:\W` as
// "C:W"): a backslash is written as two, and a tab, line feed, form feed or carriage return
// as a backslash and the byte itself, which such a reader stores as that byte.
var backslashKeys = newKeyTable(true)

func newKeyTable(backslashEscapes bool) *keyTable {
	var t keyTable
	for c := range 0x20 {
		t.classes[c] = control
	}
	t.classes[0x7f] = control
	ws := whitespace
	if backslashEscapes {
		ws = escape
		t.classes['\\'] = escape
	}
	t.classes['\t'], t.classes['\n'], t.classes['\f'], t.classes['\r'] = ws, ws, ws, ws
	t.classes[','], t.classes[' '] = escape, escape
	t.classes['='] = escapeInKey
	for c := 0x80; c < 0x100; c++ {
		t.classes[c] = nonASCII
	}
	for c, k := range t.classes {
		t.flags[c] = [...]uint8{plain: 0, escape: flagEscape, escapeInKey: flagEquals,
			whitespace: flagAlter, control: flagAlter, nonASCII: flagNonASCII}[k]
	}
	return &t
}

// whitespaceLetter is the letter written after a backslash for each whitespace byte, the way
// Telegraf and InfluxDB's Go client write them.
var whitespaceLetter = [256]byte{'\t': 't', '\n': 'n', '\f': 'f', '\r': 'r'}

// trimBackslashes removes trailing backslashes. Line protocol cannot represent them in a
// name or key: a trailing backslash would escape the separator that follows it. Telegraf
// removes them too, so both agents write the same series for the same input.
func trimBackslashes(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\\' {
		s = s[:len(s)-1]
	}
	return s
}

// scanFlags ORs the flags of every byte of s. Four independent accumulators let the loads
// overlap instead of waiting on one another, which matters because every key of every line
// passes through here.
func scanFlags(s string, keyFlags *[256]uint8) uint8 {
	var f0, f1, f2, f3 uint8
	i := 0
	for ; i+4 <= len(s); i += 4 {
		f0 |= keyFlags[s[i]]
		f1 |= keyFlags[s[i+1]]
		f2 |= keyFlags[s[i+2]]
		f3 |= keyFlags[s[i+3]]
	}
	for ; i < len(s); i++ {
		f0 |= keyFlags[s[i]]
	}
	return f0 | f1 | f2 | f3
}

// appendKey appends s escaped as a measurement (escapeEquals false) or as a tag key, tag value
// or field key (escapeEquals true), by table t. With influxKeys, s must already be trimmed
// of trailing backslashes. It
// reports whether s reads back as something else, which only whitespace, control bytes and
// invalid UTF-8 cause: escaped commas, spaces and equals signs read back as they were.
//
// Comma and space, and for keys the equals sign, get a backslash. The whitespace controls tab,
// newline, form feed and carriage return cannot appear raw, because a newline ends the line
// and the others are refused by strict parsers; they are written as the two characters `\t`,
// `\n`, `\f` and `\r`, exactly as Telegraf does, and read back as those two characters. Any
// other control byte and each run of invalid UTF-8 become U+FFFD, so that every line we write
// is accepted by InfluxDB and by the strict parser of line-protocol/v2 alike. backslashKeys
// differs as it says.
func appendKey(dst []byte, s string, escapeEquals bool, t *keyTable) ([]byte, bool) {
	f := scanFlags(s, &t.flags)
	if !escapeEquals {
		f &^= flagEquals
	}
	if f == 0 || f == flagNonASCII && utf8.ValidString(s) {
		return append(dst, s...), false
	}
	altered := f&flagAlter != 0
	for i := 0; i < len(s); {
		c := s[i]
		switch t.classes[c] {
		case plain:
			dst = append(dst, c)
		case escape:
			dst = append(dst, '\\', c)
		case escapeInKey:
			if escapeEquals {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
		case whitespace:
			dst = append(dst, '\\', whitespaceLetter[c])
		case control:
			dst = append(dst, replacement...)
		case nonASCII:
			n, invalid := 0, false
			dst, n, invalid = appendUTF8(dst, s[i:])
			altered = altered || invalid
			i += n
			continue
		}
		i++
	}
	return dst, altered
}

// appendUTF8 appends the UTF-8 sequence at the start of s, or U+FFFD for the run of invalid
// bytes there, as strings.ToValidUTF8 does. It returns how many bytes of s it consumed and
// whether they were invalid.
func appendUTF8(dst []byte, s string) ([]byte, int, bool) {
	r, size := utf8.DecodeRuneInString(s)
	if r != utf8.RuneError || size != 1 {
		return append(dst, s[:size]...), size, false
	}
	n := 1
	for n < len(s) {
		if s[n] < utf8.RuneSelf {
			break
		}
		if r, size = utf8.DecodeRuneInString(s[n:]); r != utf8.RuneError || size != 1 {
			break
		}
		n++
	}
	return append(dst, replacement...), n, true
}

// appendStringValue appends s as a quoted string field value. Only the double quote and the
// backslash are escaped: InfluxDB 1.x unescapes nothing else inside strings, so a newline or
// tab is written raw and is stored exactly. Writing `\n` instead, as some clients do, would
// be stored by InfluxDB 1.x as a backslash and an n. Invalid UTF-8 becomes U+FFFD.
func appendStringValue(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '"' || c == '\\' {
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', c)
				start = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size != 1 {
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		var n int
		dst, n, _ = appendUTF8(dst, s[i:])
		i += n
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// trim removes trailing backslashes where the reader cannot take them (influxKeys); a reader
// that takes every backslash as an escape reads a doubled one back.
func (s *Serializer) trim(x string) string {
	if s.keys == backslashKeys {
		return x
	}
	return trimBackslashes(x)
}
