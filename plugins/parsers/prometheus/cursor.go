package prometheus

import (
	"fmt"
	"strings"
)

// cursor walks one line of the exposition.
type cursor struct {
	s string
	i int
}

func (c *cursor) end() bool { return c.i >= len(c.s) }

// col is the 1-based column of the cursor.
func (c *cursor) col() int { return c.i + 1 }

// peek is the byte at the cursor, or '\n' at the end of the line, as the decoder names
// the end of a line in its messages.
func (c *cursor) peek() byte {
	if c.end() {
		return '\n'
	}
	return c.s[c.i]
}

func (c *cursor) blanks() {
	for c.i < len(c.s) && blank(c.s[c.i]) {
		c.i++
	}
}

// token reads up to the next blank or the end of the line.
func (c *cursor) token() string {
	start := c.i
	for c.i < len(c.s) && !blank(c.s[c.i]) {
		c.i++
	}
	return c.s[start:c.i]
}

// name reads a metric name (metric) or a label name: a run of the characters names are
// made of, or a quoted string. It returns "" when the cursor is at neither.
func (c *cursor) name(metric bool) (string, error) {
	if c.end() {
		return "", nil
	}
	if c.s[c.i] == '"' {
		what := "label name"
		if metric {
			what = "metric name"
		}
		return c.quoted(what)
	}
	start := c.i
	if !nameStart(c.s[c.i], metric) {
		return "", nil
	}
	for c.i < len(c.s) && nameChar(c.s[c.i], metric) {
		c.i++
	}
	return c.s[start:c.i], nil
}

// quoted reads a quoted string at the cursor, with the escapes \\, \" and \n, and
// returns its text: a piece of the line when it has no escape.
func (c *cursor) quoted(what string) (string, error) {
	c.i++ // the opening quote
	start := c.i
	var b *strings.Builder
	for c.i < len(c.s) {
		ch := c.s[c.i]
		switch ch {
		case '"':
			c.i++
			if b == nil {
				return c.s[start : c.i-1], nil
			}
			return b.String(), nil
		case '\\':
			if b == nil {
				b = &strings.Builder{}
				b.WriteString(c.s[start:c.i])
			}
			c.i++
			switch e := c.peek(); e {
			case '\\', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			default:
				return "", fmt.Errorf("invalid escape sequence '\\%c'", e)
			}
		default:
			if b != nil {
				b.WriteByte(ch)
			}
		}
		c.i++
	}
	text := c.s[start:]
	if b != nil {
		text = b.String()
	}
	return "", fmt.Errorf("%s %q contains unescaped new-line", what, text)
}
