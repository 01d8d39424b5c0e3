// Package envsubst replaces ${VAR} references in TOML text with environment values before the
// text is parsed.
//
// The syntax is a small subset of the shell's:
//
//	${VAR}            the value of VAR, or nothing when VAR is unset
//	${VAR:-default}   the value of VAR, or default when VAR is unset or empty
//	${VAR:?message}   the value of VAR, or a problem "VAR: message" when VAR is unset or empty
//	$$                a literal $
//
// A $ followed by anything else is kept as it is, so that passwords and regular expressions
// that contain a $ need no quoting. References are not nested, and a reference ends on its
// own line.
//
// The expansion knows enough TOML to be safe and to keep line numbers right:
//
//   - Nothing is replaced inside # comments, so a commented-out example never fails for a
//     missing variable.
//   - Inside a basic string ("..." or """...""") the value is escaped, so a value holding a
//     quote or a backslash cannot end the string early or change its meaning, and a line break
//     becomes \n.
//   - A literal string (single-quoted, also triple) cannot escape anything, so a value that holds the
//     string's own delimiter or a line break there is a problem rather than broken TOML.
//   - Outside strings the value is inserted as TOML text, so that PORT=8086 can fill an
//     integer and TAGS='["a", "b"]' an array. A line break there is a problem, because it
//     would shift the line numbers of every later error.
//
// A default is treated exactly like a value that came from the environment.
package envsubst

import (
	"strings"
)

// Problem is one reference that could not be expanded.
type Problem struct {
	Line int    // 1-based line of the reference in the input
	Var  string // the variable's name, or "" when the reference itself is malformed
	Msg  string // the message of ${VAR:?message}, or what is wrong
}

// LookupFunc finds an environment variable, like os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// context is where in the TOML text a reference stands, which decides how its value must be
// written.
type context int

const (
	ctxBare context = iota
	ctxBasic
	ctxMultiBasic
	ctxLiteral
	ctxMultiLiteral
	ctxComment
)

// expander walks the text once, copying it to out and tracking just enough TOML lexical state
// to know the context of each reference.
type expander struct {
	in       string
	pos      int
	line     int
	ctx      context
	out      strings.Builder
	lookup   LookupFunc
	problems []Problem
}

// Expand replaces every reference in text and returns the result with all problems found.
// Line structure is preserved: line N of the result is line N of the input. A reference that
// fails expands to nothing, so that the caller can still parse the rest of the text.
func Expand(text string, lookup LookupFunc) (string, []Problem) {
	e := &expander{in: text, line: 1, lookup: lookup}
	e.out.Grow(len(text))
	for e.pos < len(e.in) {
		e.step()
	}
	return e.out.String(), e.problems
}

// step consumes one lexical unit: a character, a delimiter or a reference.
func (e *expander) step() {
	c := e.in[e.pos]
	switch {
	case c == '\n':
		e.line++
		if e.ctx != ctxMultiBasic && e.ctx != ctxMultiLiteral {
			// A line break ends comments, and it also ends a single-line string that was
			// never closed: the parser will report that, and we recover here.
			e.ctx = ctxBare
		}
		e.copy(1)
	case c == '$' && e.ctx != ctxComment:
		e.dollar()
	case e.ctx == ctxComment:
		e.copy(1)
	case e.ctx == ctxBare:
		e.bare(c)
	case e.ctx == ctxBasic || e.ctx == ctxMultiBasic:
		e.basic(c)
	default:
		e.literal(c)
	}
}

func (e *expander) copy(n int) {
	e.out.WriteString(e.in[e.pos : e.pos+n])
	e.pos += n
}

func (e *expander) bare(c byte) {
	rest := e.in[e.pos:]
	switch {
	case c == '#':
		e.ctx = ctxComment
	case strings.HasPrefix(rest, `"""`):
		e.ctx = ctxMultiBasic
		e.copy(3)
		return
	case c == '"':
		e.ctx = ctxBasic
	case strings.HasPrefix(rest, `'''`):
		e.ctx = ctxMultiLiteral
		e.copy(3)
		return
	case c == '\'':
		e.ctx = ctxLiteral
	}
	e.copy(1)
}

func (e *expander) basic(c byte) {
	switch {
	case c == '\\' && e.pos+1 < len(e.in) && e.in[e.pos+1] != '\n':
		// An escape: the next character cannot end the string. A backslash at the end of a
		// line in a multi-line string is a line continuation, and the newline must still be
		// counted by step.
		e.copy(2)
	case e.ctx == ctxBasic && c == '"':
		e.ctx = ctxBare
		e.copy(1)
	case e.ctx == ctxMultiBasic && strings.HasPrefix(e.in[e.pos:], `"""`):
		e.closeMulti('"')
	default:
		e.copy(1)
	}
}

func (e *expander) literal(c byte) {
	switch {
	case e.ctx == ctxLiteral && c == '\'':
		e.ctx = ctxBare
		e.copy(1)
	case e.ctx == ctxMultiLiteral && strings.HasPrefix(e.in[e.pos:], `'''`):
		e.closeMulti('\'')
	default:
		e.copy(1)
	}
}

// closeMulti consumes the closing delimiter of a multi-line string. TOML allows up to two
// quotes of content right before it (""""" is a quote followed by the delimiter), so all
// quotes of the run are taken together.
func (e *expander) closeMulti(q byte) {
	n := 3
	for n < 5 && e.pos+n < len(e.in) && e.in[e.pos+n] == q {
		n++
	}
	e.copy(n)
	e.ctx = ctxBare
}

// dollar handles a $ outside comments: $$, a reference, or a lone $ kept as it is.
func (e *expander) dollar() {
	rest := e.in[e.pos:]
	if strings.HasPrefix(rest, "$$") {
		e.out.WriteByte('$')
		e.pos += 2
		return
	}
	if !strings.HasPrefix(rest, "${") {
		e.copy(1)
		return
	}
	if len(rest) > 2 && rest[2] >= '0' && rest[2] <= '9' {
		// ${1} is a regular expression's group, as processors.regex's replacements write
		// them, not a variable: names start with a letter or _, so it is kept as written,
		// as Telegraf keeps it.
		e.copy(2)
		return
	}
	end := strings.IndexAny(rest, "}\n")
	if end < 0 || rest[end] == '\n' {
		e.problem("", "unterminated ${: close the reference with } on the same line")
		e.copy(2)
		return
	}
	e.pos += end + 1
	e.reference(rest[2:end])
}

// reference expands the inside of one ${...}.
func (e *expander) reference(body string) {
	name, op, arg := body, "", ""
	if i := strings.Index(body, ":"); i >= 0 {
		name = body[:i]
		rest := body[i+1:]
		if rest == "" || (rest[0] != '-' && rest[0] != '?') {
			e.problem(name, "invalid reference ${"+body+"}: use ${VAR}, ${VAR:-default} or ${VAR:?message}")
			return
		}
		op, arg = rest[:1], rest[1:]
	}
	if !validName(name) {
		e.problem("", "invalid variable name in ${"+body+"}")
		return
	}
	val, ok := e.lookup(name)
	if !ok || val == "" {
		switch op {
		case "-":
			val = arg
		case "?":
			msg := arg
			if msg == "" {
				msg = "required environment variable is unset or empty"
			}
			e.problem(name, msg)
			return
		}
	}
	e.insert(name, val)
}

// insert writes val in the way the current context requires.
func (e *expander) insert(name, val string) {
	switch e.ctx {
	case ctxBasic, ctxMultiBasic:
		writeEscaped(&e.out, val)
	case ctxLiteral:
		if strings.ContainsAny(val, "'\n\r") {
			e.problem(name, "the value contains a ' or a line break and cannot stand in a literal '...' string: use a \"...\" string")
			return
		}
		e.out.WriteString(val)
	case ctxMultiLiteral:
		if strings.Contains(val, "'''") || strings.ContainsAny(val, "\n\r") {
			e.problem(name, "the value contains ''' or a line break and cannot stand in a literal '''...''' string: use a \"...\" string")
			return
		}
		e.out.WriteString(val)
	default:
		if strings.ContainsAny(val, "\n\r") {
			e.problem(name, "the value contains a line break, which is allowed only inside a quoted string")
			return
		}
		e.out.WriteString(val)
	}
}

func (e *expander) problem(name, msg string) {
	e.problems = append(e.problems, Problem{Line: e.line, Var: name, Msg: msg})
}

// writeEscaped writes s as the content of a TOML basic string.
func writeEscaped(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
				continue
			}
			b.WriteByte(c)
		}
	}
}

// validName reports whether s is a shell-style variable name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}
