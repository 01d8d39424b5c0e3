package influx

import (
	"bytes"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// Line metrics (morse.NewLineMetric) carry an entry's text instead of its parsed name, tags
// and fields, for listeners whose metrics go unchanged to outputs that write line protocol.
// The check here costs a fraction of a parse: it copies nothing but the text and builds no
// values. It is narrower than the fast path, because the text goes to the database as it is:
// an entry qualifies only if InfluxDB 1.x reads it exactly as morse's parser does.
//
//   - A backslash must escape a character that needs it. InfluxDB 1.x skips whatever follows
//     a backslash while it looks for separators, and v2 does not, so `a\\,b` would split
//     differently.
//   - A string value may escape only `"` and `\`: InfluxDB 1.x keeps `\n` as two characters,
//     while morse's parser reads a newline.
//   - Numbers are plain decimals without leading zeros, in range. Unsigned integers are
//     flagged (morse.LineText.Uints), so that an output that writes them as signed ones
//     knows to rewrite them.
//   - Tag keys are distinct: the parser refuses duplicates, and so must this check.
//
// Any other entry falls through to the fast path, and from there to the reference path, so
// the check never needs to know why an entry does not qualify.

// lineStringKind scans string values for line metrics: the only escapes are `\"` and `\\`.
var lineStringKind = newTokenKind("\"\n", false, map[byte]byte{'\\': '\\', '"': '"'})

// maxLineTags bounds the tags of a line metric, so that checking them for duplicates stays
// a few comparisons and needs no allocation.
const maxLineTags = 16

// lineEntry checks the entry that starts at data[pos] and returns it as a line metric, with
// the offset just after the entry. It never allocates but for the metric's text.
func (r *run) lineEntry(data []byte, pos int, atEOF bool) (morse.Metric, int, fastStatus) {
	c := fastCur{data: data, i: pos, atEOF: atEOF}
	start, end, st := c.skim(measurementKind)
	if st != fastOK {
		return morse.Metric{}, 0, st
	}
	if end == start {
		return morse.Metric{}, 0, fastBail
	}
	if st := c.skimTags(); st != fastOK {
		return morse.Metric{}, 0, st
	}
	r.uints = false
	textEnd, ts, st := c.fieldSet(r)
	if st != fastOK {
		return morse.Metric{}, 0, st
	}
	t, err := r.timestamp(ts)
	if err != nil {
		return morse.Metric{}, 0, fastBail
	}
	// The text is copied into a string of its own, so that a metric in an output's buffer
	// holds on to its own line and not to a whole read buffer.
	return morse.NewLineMetric(morse.LineText{Text: string(data[pos:textEnd]), Uints: r.uints}, t), c.i, fastOK
}

// skim scans a token of kind k without copying it, and returns where it starts and ends.
// Unlike token it refuses a backslash that escapes nothing.
func (c *fastCur) skim(k *tokenKind) (start, end int, st fastStatus) {
	data := c.data
	start, high := c.i, false
	for {
		i := c.i
		for i < len(data) && k.class[data[i]] == clPlain {
			i++
		}
		c.i = i
		if i == len(data) {
			return 0, 0, c.more()
		}
		switch k.class[data[i]] {
		case clHigh:
			high = true
			c.i++
			continue
		case clStop:
			// Escapes are ASCII pairs, so the text is valid UTF-8 exactly when the unescaped
			// token is.
			if high && !utf8.Valid(data[start:i]) {
				return 0, 0, fastBail
			}
			return start, i, fastOK
		}
		if i+1 == len(data) {
			return 0, 0, c.more()
		}
		if k.esc[data[i+1]] == 0 {
			return 0, 0, fastBail
		}
		c.i = i + 2
	}
}

// skimKey scans a tag or field key and the equals sign after it.
func (c *fastCur) skimKey() (start, end int, st fastStatus) {
	start, end, st = c.skim(keyKind)
	if st != fastOK {
		return 0, 0, st
	}
	if end == start || c.data[c.i] != '=' {
		return 0, 0, fastBail
	}
	c.i++
	return start, end, fastOK
}

// skimTags checks the tag set, if any, and skips the spaces before the field set. With
// escapes only where they are needed, equal keys have equal text, so the text is compared.
func (c *fastCur) skimTags() fastStatus {
	var keys [maxLineTags]span
	n := 0
	for c.data[c.i] == ',' {
		c.i++
		ks, ke, st := c.skimKey()
		if st != fastOK {
			return st
		}
		vs, ve, st := c.skim(keyKind)
		if st != fastOK {
			return st
		}
		if ve == vs || n == len(keys) {
			return fastBail
		}
		key := c.data[ks:ke]
		for _, k := range keys[:n] {
			if bytes.Equal(c.data[k.off:k.end], key) {
				return fastBail
			}
		}
		keys[n] = span{ks, ke}
		n++
	}
	if c.data[c.i] != ' ' {
		return fastBail
	}
	c.spaces()
	return fastOK
}

// skimField checks one key=value pair, and sets r.uints for an unsigned integer.
func (c *fastCur) skimField(r *run) fastStatus {
	if _, _, st := c.skimKey(); st != fastOK {
		return st
	}
	if c.i == len(c.data) {
		return c.more()
	}
	if c.data[c.i] == '"' {
		c.i++
		if _, _, st := c.skim(lineStringKind); st != fastOK {
			return st
		}
		if c.data[c.i] != '"' {
			return fastBail // a newline in the string
		}
		c.i++
		return fastOK
	}
	raw, st := c.value()
	if st != fastOK {
		return st
	}
	if len(raw) == 0 {
		return fastBail
	}
	switch raw[len(raw)-1] {
	case 'i':
		if !plainInt(raw[:len(raw)-1]) {
			return fastBail
		}
	case 'u':
		if !plainUint(raw[:len(raw)-1]) {
			return fastBail
		}
		r.uints = true
	default:
		if !plainBool(raw) && !plainFloat(raw) {
			return fastBail
		}
	}
	return fastOK
}

// digitRun returns how many decimal digits b starts with.
func digitRun(b []byte) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

// plainDigits reports whether b is a run of digits without a leading zero (but "0" itself).
func plainDigits(b []byte) bool {
	n := digitRun(b)
	return n == len(b) && n > 0 && (b[0] != '0' || n == 1)
}

// plainInt reports whether b is a signed decimal integer in the int64 range.
func plainInt(b []byte) bool {
	digits := b
	if len(b) > 0 && b[0] == '-' {
		digits = b[1:]
	}
	if !plainDigits(digits) {
		return false
	}
	_, err := parseInt(b)
	return err == nil
}

// plainUint reports whether b is an unsigned decimal integer in the uint64 range.
func plainUint(b []byte) bool {
	if !plainDigits(b) {
		return false
	}
	_, err := parseUint(b)
	return err == nil
}

// plainBool reports whether b is one of the words both InfluxDB 1.x and the parser take.
func plainBool(b []byte) bool {
	switch string(b) {
	case "t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE":
		return true
	}
	return false
}

// maxPlainIntDigits is how many integral digits a float may have without an exponent and
// still be finite: the largest float64 is about 1.8e308.
const maxPlainIntDigits = 308

// plainFloat reports whether b is [-]digits[.digits][e[+-]digits], without leading zeros,
// and finite.
func plainFloat(b []byte) bool {
	i := 0
	if len(b) > 0 && b[0] == '-' {
		i = 1
	}
	n := digitRun(b[i:])
	if n == 0 || n > maxPlainIntDigits || (b[i] == '0' && n > 1) {
		return false
	}
	i += n
	if i < len(b) && b[i] == '.' {
		n = digitRun(b[i+1:])
		if n == 0 {
			return false
		}
		i += 1 + n
	}
	if i == len(b) {
		return true
	}
	if b[i] != 'e' && b[i] != 'E' {
		return false
	}
	i++
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	if n = digitRun(b[i:]); n == 0 || i+n != len(b) {
		return false
	}
	// An exponent can overflow; strconv, through the parser's own conversion, says.
	_, err := convertFloat(b)
	return err == nil
}
