package influx

import (
	"unicode/utf8"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/morse-agent/morse"
)

// The fast path parses an ordinary entry in one pass, straight into the scratch buffer, with
// no splitter pass before it and no decoder state. It exists because the reference path (the
// splitter, then the line-protocol/v2 decoder) costs over 2.5 µs per line of realistic
// input, more than a listener's whole budget for carrying a line to the output's wire.
//
// It is deliberately narrow. It handles what senders really send: escapes, every value type,
// UTF-8, trailing spaces, a missing timestamp. Anything else (a carriage return, a newline in
// a string, a comment, any error at all) makes it bail, and the reference path judges the
// entry as if the fast path did not exist, with InfluxDB's wording and the exact line number.
// So the fast path never needs to know why an entry is wrong, only that it is not plainly
// right, and a differential fuzz test holds it to producing what the reference path does.

// fastStatus is what the fast path made of an entry.
type fastStatus uint8

const (
	fastOK   fastStatus = iota // a metric, identical to the reference path's
	fastBail                   // not an ordinary valid entry: the reference path decides
	fastMore                   // the entry runs past the data read so far
)

// Byte classes of a token: bytes that continue it, bytes that end it, a backslash, and
// bytes of multi-byte UTF-8 characters, which continue it but call for a validity check.
const (
	clPlain uint8 = iota
	clStop
	clEsc
	clHigh
)

// tokenKind holds how one kind of token is scanned: which bytes end it, and what each byte
// after a backslash stands for (zero: the backslash is a literal one).
type tokenKind struct {
	class [256]uint8
	esc   [256]byte
}

func newTokenKind(stops string, stopControl bool, escapes map[byte]byte) *tokenKind {
	k := &tokenKind{}
	for c := 0x80; c < 0x100; c++ {
		k.class[c] = clHigh
	}
	if stopControl {
		for c := 0; c < 0x20; c++ {
			k.class[c] = clStop
		}
		k.class[0x7f] = clStop
	}
	for i := 0; i < len(stops); i++ {
		k.class[stops[i]] = clStop
	}
	k.class['\\'] = clEsc
	for from, to := range escapes {
		k.esc[from] = to
	}
	return k
}

// The token kinds follow the decoder's byte sets and escapes, except in string values,
// which unescape only `\"` and `\\`, as InfluxDB 1.x and Telegraf's default parser do (see
// literalEscapes). A string value stops at a newline as well as at its closing quote: a
// string that spans lines goes to the reference path, which counts its lines.
var (
	measurementKind = newTokenKind(" ,", true, map[byte]byte{' ': ' ', ',': ','})
	keyKind         = newTokenKind(" ,=", true, map[byte]byte{' ': ' ', ',': ',', '=': '='})
	stringKind      = newTokenKind("\"\n", false, map[byte]byte{'\\': '\\', '"': '"'})
)

// fastCur walks one entry.
type fastCur struct {
	data  []byte
	i     int
	atEOF bool
	sc    *scratch
}

// more is the status of an entry that the data ends in the middle of: at the end of the
// stream it can never be valid, and otherwise the rest may still arrive.
func (c *fastCur) more() fastStatus {
	if c.atEOF {
		return fastBail
	}
	return fastMore
}

// token scans a token of kind k, unescaped into the scratch buffer. It stops at the first
// byte that ends the token; reaching the end of the data is reported as more().
func (c *fastCur) token(k *tokenKind) (span, fastStatus) {
	sc, data := c.sc, c.data
	start, from, high := len(sc.text), c.i, false
	for {
		i := c.i
		for i < len(data) && k.class[data[i]] == clPlain {
			i++
		}
		c.i = i
		if i == len(data) {
			return span{}, c.more()
		}
		switch k.class[data[i]] {
		case clHigh:
			high = true
			c.i++
			continue
		case clStop:
			sc.text = append(sc.text, data[from:i]...)
			if high && !utf8.Valid(sc.text[start:]) {
				return span{}, fastBail
			}
			return span{start, len(sc.text)}, fastOK
		}
		// A backslash: it escapes the next byte if the kind says so, and otherwise stands
		// for itself while the next byte is read afresh.
		if i+1 == len(data) {
			return span{}, c.more()
		}
		if r := k.esc[data[i+1]]; r != 0 {
			sc.text = append(append(sc.text, data[from:i]...), r)
			c.i, from = i+2, i+2
			continue
		}
		c.i++
	}
}

// spaces skips the spaces that separate sections.
func (c *fastCur) spaces() {
	for c.i < len(c.data) && c.data[c.i] == ' ' {
		c.i++
	}
}

// lineEnd consumes the end of the entry after its last section and trailing spaces: a
// newline, or the end of the stream.
func (c *fastCur) lineEnd() fastStatus {
	c.spaces()
	if c.i == len(c.data) {
		if c.atEOF {
			return fastOK
		}
		return fastMore
	}
	if c.data[c.i] != '\n' {
		return fastBail
	}
	c.i++
	return fastOK
}

// fastEntry parses the entry that starts at data[pos], which is neither a space, a comment
// nor a line ending. It returns the metric and the offset just after the entry.
func (r *run) fastEntry(data []byte, pos int, atEOF bool) (morse.Metric, int, fastStatus) {
	sc := &r.sc
	sc.text, sc.tags, sc.fields = sc.text[:0], sc.tags[:0], sc.fields[:0]
	c := fastCur{data: data, i: pos, atEOF: atEOF, sc: sc}
	name, st := c.token(measurementKind)
	if st != fastOK {
		return morse.Metric{}, 0, st
	}
	if name.end == name.off {
		return morse.Metric{}, 0, fastBail
	}
	if st := c.tags(); st != fastOK {
		return morse.Metric{}, 0, st
	}
	_, ts, st := c.fieldSet(nil)
	if st != fastOK {
		return morse.Metric{}, 0, st
	}
	t, err := r.timestamp(ts)
	if err != nil {
		return morse.Metric{}, 0, fastBail
	}
	m, err := sc.build(name, t)
	if err != nil {
		return morse.Metric{}, 0, fastBail
	}
	return m, c.i, fastOK
}

// tags reads the tag set, if any, and the spaces before the field set.
func (c *fastCur) tags() fastStatus {
	for c.data[c.i] == ',' {
		c.i++
		key, st := c.key()
		if st != fastOK {
			return st
		}
		val, st := c.token(keyKind)
		if st != fastOK {
			return st
		}
		if val.end == val.off {
			return fastBail
		}
		c.sc.tags = append(c.sc.tags, tagRef{key, val})
	}
	if c.data[c.i] != ' ' {
		return fastBail
	}
	c.spaces()
	return fastOK
}

// fieldSet reads the field set and what follows it. It returns where the last field ends,
// the timestamp, if any, and the end of the entry. Fields are parsed into the scratch
// buffer, or with lines set, only checked for a line metric.
func (c *fastCur) fieldSet(lines *run) (textEnd int, ts []byte, st fastStatus) {
	for {
		if lines != nil {
			st = c.skimField(lines)
		} else {
			st = c.field()
		}
		if st != fastOK {
			return 0, nil, st
		}
		textEnd = c.i
		if c.i == len(c.data) {
			if c.atEOF {
				return textEnd, nil, fastOK
			}
			return 0, nil, fastMore
		}
		switch c.data[c.i] {
		case ',':
			c.i++
			continue
		case '\n':
			c.i++
			return textEnd, nil, fastOK
		case ' ':
		default:
			return 0, nil, fastBail
		}
		c.spaces()
		if c.i == len(c.data) || c.data[c.i] == '\n' {
			return textEnd, nil, c.lineEnd()
		}
		data, start := c.data, c.i
		i := start
		for i < len(data) && (data[i]-'0' <= 9 || data[i] == '-') {
			i++
		}
		if i == start || i < len(data) && data[i] != ' ' && data[i] != '\n' {
			return 0, nil, fastBail
		}
		c.i, ts = i, data[start:i]
		return textEnd, ts, c.lineEnd()
	}
}

// key reads a tag or field key and the equals sign after it.
func (c *fastCur) key() (span, fastStatus) {
	key, st := c.token(keyKind)
	if st != fastOK {
		return span{}, st
	}
	if key.end == key.off || c.data[c.i] != '=' {
		return span{}, fastBail
	}
	c.i++
	return key, fastOK
}

// field reads one key=value pair.
func (c *fastCur) field() fastStatus {
	key, st := c.key()
	if st != fastOK {
		return st
	}
	if c.i == len(c.data) {
		return c.more()
	}
	f := fieldRef{key: key}
	switch b := c.data[c.i]; {
	case b == '"':
		c.i++
		if f.str, st = c.token(stringKind); st != fastOK {
			return st
		}
		if c.data[c.i] != '"' {
			return fastBail // a newline in the string
		}
		c.i++
		f.isStr = true
	case b == 't' || b == 'T' || b == 'f' || b == 'F' || b == '-' || b == '.' || (b >= '0' && b <= '9'):
		raw, st := c.value()
		if st != fastOK {
			return st
		}
		var err error
		if f.val, err = convert(valueKind(raw)); err != nil {
			return fastBail
		}
	default:
		return fastBail
	}
	c.sc.fields = append(c.sc.fields, f)
	return fastOK
}

// value takes the bytes of a value that is not a string, as the decoder does: up to a comma,
// a space, a carriage return or a newline. A value that the data ends in may go on.
func (c *fastCur) value() ([]byte, fastStatus) {
	start := c.i
	for c.i < len(c.data) {
		switch c.data[c.i] {
		case ',', ' ', '\r', '\n':
			return c.data[start:c.i], fastOK
		}
		c.i++
	}
	if !c.atEOF {
		return nil, fastMore
	}
	return c.data[start:], fastOK
}

// valueKind tells a value's type by its first and last bytes, as the decoder does, and
// returns its digits without the type suffix of an integer.
func valueKind(raw []byte) (lineprotocol.ValueKind, []byte) {
	switch raw[0] {
	case 't', 'T', 'f', 'F':
		return lineprotocol.Bool, raw
	}
	switch raw[len(raw)-1] {
	case 'i':
		return lineprotocol.Int, raw[:len(raw)-1]
	case 'u':
		return lineprotocol.Uint, raw[:len(raw)-1]
	}
	return lineprotocol.Float, raw
}
