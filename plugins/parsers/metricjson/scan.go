package metricjson

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner reads JSON values from text. Strings without escapes are returned as substrings
// of text, so that parsing does not copy them one by one.
type scanner struct {
	text string
	pos  int
}

// SyntaxError is a position in the input where it stops being JSON.
type SyntaxError struct {
	Offset int    // byte offset in the input
	Msg    string // what was wrong there
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("json: offset %d: %s", e.Offset, e.Msg) }

func (s *scanner) fail(format string, args ...any) error {
	return &SyntaxError{Offset: s.pos, Msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) ws() {
	for s.pos < len(s.text) {
		switch s.text[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// done skips white space and reports whether the input is used up.
func (s *scanner) done() bool {
	s.ws()
	return s.pos == len(s.text)
}

// peek skips white space and returns the next byte, or 0 at the end (see done).
func (s *scanner) peek() byte {
	s.ws()
	if s.pos == len(s.text) {
		return 0
	}
	return s.text[s.pos]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.pos == len(s.text) {
			return s.fail("unexpected end of input, expected %q", c)
		}
		return s.fail("expected %q, found %q", c, s.text[s.pos])
	}
	s.pos++
	return nil
}

// more reads the separator after a member or element: it reports true after a comma and
// false at the closing byte, which it consumes.
func (s *scanner) more(closing byte) (bool, error) {
	switch s.peek() {
	case ',':
		s.pos++
		return true, nil
	case closing:
		s.pos++
		return false, nil
	}
	return false, s.fail("expected ',' or %q", closing)
}

// members calls member for every key of the object that starts here, positioned at the
// key's value, which member must consume.
func (s *scanner) members(member func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail("expected a string key")
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		if more, err := s.more('}'); !more || err != nil {
			return err
		}
	}
}

// str reads a string; the scanner stands at its opening quote.
func (s *scanner) str() (string, error) {
	s.pos++ // the quote
	start := s.pos
	for s.pos < len(s.text) {
		c := s.text[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.text[start : s.pos-1], nil
		case c == '\\':
			return s.unescape(start)
		case c < 0x20:
			return "", s.fail("control character in string")
		}
		s.pos++
	}
	return "", s.fail("unterminated string")
}

// unescape finishes a string that holds escapes, from start, the byte after the quote.
func (s *scanner) unescape(start int) (string, error) {
	buf := make([]byte, 0, s.pos-start+16)
	buf = append(buf, s.text[start:s.pos]...)
	for s.pos < len(s.text) {
		c := s.text[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(buf), nil
		case c < 0x20:
			return "", s.fail("control character in string")
		case c != '\\':
			buf = append(buf, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.text) {
			break
		}
		e := s.text[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := s.unicode()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		default:
			s.pos -= 2
			return "", s.fail("invalid escape \\%c", e)
		}
	}
	return "", s.fail("unterminated string")
}

// unicode reads the hex digits of a \u escape, and a second escape for a surrogate pair. A
// lone surrogate becomes U+FFFD, as encoding/json reads it.
func (s *scanner) unicode() (rune, error) {
	r, ok := s.hex4()
	if !ok {
		return 0, s.fail("invalid \\u escape")
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if s.pos+6 <= len(s.text) && s.text[s.pos] == '\\' && s.text[s.pos+1] == 'u' {
		save := s.pos
		s.pos += 2
		if r2, ok := s.hex4(); ok {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return dec, nil
			}
		}
		s.pos = save
	}
	return utf8.RuneError, nil
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.text) {
		return 0, false
	}
	n, err := strconv.ParseUint(s.text[s.pos:s.pos+4], 16, 32)
	if err != nil {
		return 0, false
	}
	s.pos += 4
	return rune(n), true
}

// number reads a number as its text and reports whether it is written as an integer: no
// fraction and no exponent.
func (s *scanner) number() (text string, integer bool, err error) {
	start := s.pos
	integer = true
	if s.pos < len(s.text) && s.text[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.text) && s.text[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return "", false, s.fail("invalid number")
	}
	if s.pos < len(s.text) && s.text[s.pos] == '.' {
		s.pos++
		integer = false
		if s.digits() == 0 {
			return "", false, s.fail("invalid number: no digits after the decimal point")
		}
	}
	if s.pos < len(s.text) && (s.text[s.pos] == 'e' || s.text[s.pos] == 'E') {
		s.pos++
		integer = false
		if s.pos < len(s.text) && (s.text[s.pos] == '+' || s.text[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return "", false, s.fail("invalid number: no digits in the exponent")
		}
	}
	// A number ends at white space or punctuation: "01" or "1x" is not two values.
	if s.pos < len(s.text) {
		if c := s.text[s.pos]; c-'0' <= 9 || c == '.' || c == '-' || c == '+' || c|0x20 >= 'a' && c|0x20 <= 'z' {
			return "", false, s.fail("invalid character %q in number", c)
		}
	}
	return s.text[start:s.pos], integer, nil
}

func (s *scanner) digits() int {
	start := s.pos
	for s.pos < len(s.text) && s.text[s.pos]-'0' <= 9 {
		s.pos++
	}
	return s.pos - start
}

// literal reads true, false or null.
func (s *scanner) literal() (string, error) {
	for _, lit := range []string{"true", "false", "null"} {
		if len(s.text)-s.pos >= len(lit) && s.text[s.pos:s.pos+len(lit)] == lit {
			s.pos += len(lit)
			return lit, nil
		}
	}
	return "", s.fail("invalid value")
}

// skip reads any value and returns its text.
func (s *scanner) skip() (string, error) {
	s.ws()
	start := s.pos
	var err error
	switch c := s.peek(); {
	case c == '{':
		err = s.members(func(string) error { _, err := s.skip(); return err })
	case c == '[':
		err = s.elements(func() error { _, err := s.skip(); return err })
	case c == '"':
		_, err = s.str()
	case c == '-' || c-'0' <= 9:
		_, _, err = s.number()
	case s.done():
		err = s.fail("unexpected end of input")
	default:
		_, err = s.literal()
	}
	return s.text[start:s.pos], err
}

// elements calls element for every element of the array that starts here.
func (s *scanner) elements(element func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		s.ws()
		if err := element(); err != nil {
			return err
		}
		if more, err := s.more(']'); !more || err != nil {
			return err
		}
	}
}

// compact returns the text of an object or array without insignificant white space.
func compact(text string) string {
	var buf bytes.Buffer
	if stdjson.Compact(&buf, []byte(text)) != nil {
		return text // the scanner accepted it, so this does not happen
	}
	return buf.String()
}
