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
//   - A string value may escape only `"` and `\`: InfluxDB 1.x and this parser keep `\n` as
//     two characters, while the v2 decoder that expands a line metric (morse.Metric.Expanded)
//     would read a newline.
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
	return morse.NewLineMetric(morse.LineText{Text: r.keepText(data[pos:textEnd]), Uints: r.uints}, t), c.i, fastOK
}

// lineArenaSize is the size of the blocks that hold the text of line metrics.
const lineArenaSize = 2 << 10

// keepText copies the text of a line metric out of the read buffer, which the listener
// reuses. Short texts share blocks of lineArenaSize bytes: one allocation serves a dozen
// lines, where a string of its own for each line cost a sixth of the check. A block is only
// ever appended to, so the bytes under a string it returned never change, as Go requires of
// a string. A metric in an output's buffer pins at most one block, not a whole read buffer:
// metrics mostly leave a buffer in the order they came, and their blocks with them.
func (r *run) keepText(text []byte) string {
	if len(text) > lineArenaSize/4 {
		return string(text)
	}
	if cap(r.arena)-len(r.arena) < len(text) {
		r.arena = make([]byte, 0, lineArenaSize)
	}
	off := len(r.arena)
	r.arena = append(r.arena, text...)
	return unsafeString(r.arena[off:])
}

// skim scans a token of kind k without copying it, and returns where it starts and ends.
// Unlike token it refuses a backslash that escapes nothing. Its loop repeats token's on
// purpose: one shared loop behind a call, which the compiler did not inline, made the line
// check 13% slower (BenchmarkParseLoadDatagrams, 516-522 against 454-462 ns/line).
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
// Senders mostly sort their tags, as InfluxDB does: a key after a smaller one differs from
// every key before it, and only a key out of order is compared with all of them.
func (c *fastCur) skimTags() fastStatus {
	var keys [maxLineTags]span
	n, sorted := 0, true
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
		if n > 0 && (!sorted || bytes.Compare(c.data[keys[n-1].off:keys[n-1].end], key) >= 0) {
			sorted = false
			for _, k := range keys[:n] {
				if bytes.Equal(c.data[k.off:k.end], key) {
					return fastBail
				}
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
	switch c.data[c.i] {
	case '"':
		c.i++
		if _, _, st := c.skim(lineStringKind); st != fastOK {
			return st
		}
		if c.data[c.i] != '"' {
			return fastBail // a newline in the string
		}
		c.i++
		return fastOK
	case 't', 'T', 'f', 'F':
		raw, st := c.value()
		if st != fastOK {
			return st
		}
		if !plainBool(raw) {
			return fastBail
		}
		return fastOK
	}
	return c.skimNumber(r)
}

// plainBool reports whether b is one of the words both InfluxDB 1.x and the parser take.
func plainBool(b []byte) bool {
	switch string(b) {
	case "t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE":
		return true
	}
	return false
}

// The largest integers, as decimal text. A run of as many digits is in range exactly when
// it does not sort after its bound, so a bound is checked with one comparison and no
// conversion.
const (
	maxInt64Text  = "9223372036854775807"
	minInt64Text  = "9223372036854775808" // the digits of math.MinInt64, after its sign
	maxUint64Text = "18446744073709551615"
)

// maxPlainIntDigits is how many integral digits a float may have without an exponent and
// still be finite: the largest float64 is about 1.8e308.
const maxPlainIntDigits = 308

// skimNumber checks a number at c.i and moves past it: [-]digits then i; digits then u; or
// [-]digits[.digits][e[+-]digits] for a float; no leading zeros, in range. It reads each
// byte once and converts nothing but a float whose exponent might take it out of range.
func (c *fastCur) skimNumber(r *run) fastStatus {
	data, i := c.data, c.i
	start := i
	neg := i < len(data) && data[i] == '-'
	if neg {
		i++
	}
	ds := i
	i = digitsEnd(data, i)
	nd := i - ds
	if nd == 0 && i == len(data) {
		return c.more()
	}
	if nd == 0 || (nd > 1 && data[ds] == '0') {
		return fastBail
	}
	if i < len(data) {
		switch data[i] {
		case 'i':
			bound := maxInt64Text
			if neg {
				bound = minInt64Text
			}
			if nd > len(bound) || nd == len(bound) && string(data[ds:i]) > bound {
				return fastBail
			}
			return c.valueEnd(i + 1)
		case 'u':
			if neg || nd > len(maxUint64Text) || nd == len(maxUint64Text) && string(data[ds:i]) > maxUint64Text {
				return fastBail
			}
			r.uints = true
			return c.valueEnd(i + 1)
		}
	}
	if nd > maxPlainIntDigits {
		return fastBail
	}
	if i < len(data) && data[i] == '.' {
		fs := i + 1
		if i = digitsEnd(data, fs); i == fs {
			return c.missingDigit(i)
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		return c.skimExponent(start, i+1, nd)
	}
	return c.valueEnd(i)
}

// skimExponent checks the exponent of a float that starts at data[start] and has nd
// integral digits, from just after its e. Below 10^300 a float is finite, and so it is with
// at most 200 integral digits and an exponent of two digits; strconv judges the rest.
func (c *fastCur) skimExponent(start, i, nd int) fastStatus {
	data := c.data
	if i < len(data) && (data[i] == '+' || data[i] == '-') {
		i++
	}
	ds := i
	if i = digitsEnd(data, i); i == ds {
		return c.missingDigit(i)
	}
	if i-ds > 2 || nd > 200 {
		if i == len(data) && !c.atEOF {
			return fastMore
		}
		if _, err := convertFloat(data[start:i]); err != nil {
			return fastBail
		}
	}
	return c.valueEnd(i)
}

// digitsEnd returns the offset of the first byte of data from i on that is not a decimal
// digit, or len(data).
func digitsEnd(data []byte, i int) int {
	for i < len(data) && data[i]-'0' <= 9 {
		i++
	}
	return i
}

// missingDigit is the status of a number that lacks a digit at data[i]: it may yet come if
// the data ends there.
func (c *fastCur) missingDigit(i int) fastStatus {
	if i == len(c.data) {
		return c.more()
	}
	return fastBail
}

// valueEnd moves past a value that ends before data[i], if a comma, a space or a newline
// follows it, or the stream ends there.
func (c *fastCur) valueEnd(i int) fastStatus {
	if i == len(c.data) {
		if !c.atEOF {
			return fastMore
		}
	} else if b := c.data[i]; b != ',' && b != ' ' && b != '\n' {
		return fastBail
	}
	c.i = i
	return fastOK
}
