// Package envsubst replaces environment variable references in TOML text before the text
// is parsed, as Telegraf 1.39.3 replaces them.
//
// The references are Telegraf's (reference.go gives the rules in full):
//
//	$VAR or ${VAR}    the value of VAR; kept as written when VAR is unset, empty when it is empty
//	${VAR:-default}   default when VAR is unset or empty (${VAR-default}: when unset)
//	${VAR:+other}     other when VAR is set and not empty (${VAR+other}: when set)
//	${VAR:?message}   a problem "VAR: message" when VAR is unset or empty (${VAR?message}: unset)
//	$$                a literal $
//
// A name is a letter or _ followed by letters, digits and _, so "$HOST.example" is HOST
// followed by ".example". A $ that starts no reference, and a ${ that starts no valid one
// (such as ${1}, a regular expression's group), are kept as they are. Each unset variable
// is reported as a warning, since Telegraf's keeping "$HOSTNAME" as a tag value is rarely
// what the author meant.
//
// Where it applies follows Telegraf's parsed-document rule: every string value, also in
// arrays and inline tables, and never a key (a [table] header, a key before =, a quoted
// key) nor a # comment. Outside strings morse also replaces references in values, so that
// PORT=8086 can fill an integer and TAGS='["a", "b"]' an array, as Telegraf does when its
// strict handling is off.
//
// The expansion knows enough TOML to be safe and to keep line numbers right:
//
//   - Inside a basic string ("..." or """...""") the value is escaped, so a value holding a
//     quote or a backslash cannot end the string early or change its meaning, and a line break
//     becomes \n. Text around a reference, a default too, is already TOML and is kept.
//   - A literal string (single-quoted, also triple) cannot escape anything, so a value that
//     holds the string's own delimiter or a line break there is a problem rather than broken
//     TOML.
//   - Outside strings a line break in a value is a problem, because it would shift the line
//     numbers of every later error.
package envsubst

import (
	"strings"
)

// Problem is one reference that could not be expanded, or, when Warning is set, one that
// was expanded in a way the author may not expect.
type Problem struct {
	Line int    // 1-based line of the reference in the input
	Var  string // the variable's name, or "" when the reference itself is malformed
	Msg  string // the message of ${VAR:?message}, or what is wrong
	// Warning is set when the text was still expanded as Telegraf expands it (an unset
	// variable), so that loading can go on.
	Warning bool
	// Key is the last part of the key whose value holds the reference, such as
	// "name_templates", so that a caller can tell a template's $NAME from a variable.
	Key string
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
// to know the context of each reference and whether it stands in a key.
type expander struct {
	in       string
	pos      int
	line     int
	ctx      context
	out      strings.Builder
	res      resolver
	problems []Problem
	// keyPos is set where bare text is a key: at the start of a line outside any array or
	// inline table, in a [header], and after { or , in an inline table.
	keyPos bool
	// strKey is set when the string being read is a quoted key.
	strKey bool
	// nest holds the [ of arrays and the { of inline tables that are open.
	nest []byte
	// keyStart is where the key being read starts, and key the last key read.
	keyStart int
	key      string
}

// Expand replaces every reference in text and returns the result with all problems and
// warnings found. Line structure is preserved: line N of the result is line N of the input.
// A reference that fails expands to nothing, so that the caller can still parse the rest of
// the text.
func Expand(text string, lookup LookupFunc) (string, []Problem) {
	e := &expander{in: text, line: 1, keyPos: true}
	e.res = resolver{lookup: lookup, quote: e.quote}
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
			if len(e.nest) == 0 {
				e.startKey(1)
			}
		}
		e.copy(1)
	case c == '$' && e.ctx != ctxComment && !e.inKey():
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
		e.openString(ctxMultiBasic, 3)
		return
	case c == '"':
		e.openString(ctxBasic, 1)
		return
	case strings.HasPrefix(rest, "'''"):
		e.openString(ctxMultiLiteral, 3)
		return
	case c == '\'':
		e.openString(ctxLiteral, 1)
		return
	default:
		e.structure(c)
	}
	e.copy(1)
}

func (e *expander) openString(ctx context, n int) {
	e.ctx = ctx
	e.strKey = e.keyPos
	e.copy(n)
}

// structure follows the characters that move between keys and values.
func (e *expander) structure(c byte) {
	top := byte(0)
	if len(e.nest) > 0 {
		top = e.nest[len(e.nest)-1]
	}
	switch {
	case c == '=' && e.keyPos:
		e.keyPos = false
		e.key = lastKeyPart(e.in[e.keyStart:e.pos])
	case c == '[' && !e.keyPos:
		e.nest = append(e.nest, '[')
	case c == '{' && !e.keyPos:
		e.nest = append(e.nest, '{')
		e.startKey(1)
	case (c == ']' && top == '[') || (c == '}' && top == '{'):
		e.nest = e.nest[:len(e.nest)-1]
		e.keyPos = false
	case c == ',' && top == '{':
		e.startKey(1)
	}
}

// startKey notes that a key starts n bytes after the position.
func (e *expander) startKey(n int) {
	e.keyPos = true
	e.keyStart = e.pos + n
}

// lastKeyPart is the last part of a dotted key as written, without quotes or spaces.
func lastKeyPart(k string) string {
	k = strings.TrimSpace(k)
	if i := strings.LastIndexAny(k, ".\"'"); i >= 0 && i == len(k)-1 && len(k) > 1 {
		// a quoted last part: take it up to its opening quote
		q := k[i]
		if j := strings.LastIndexByte(k[:i], q); j >= 0 {
			return k[j+1 : i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		k = strings.TrimSpace(k[i+1:])
	}
	return k
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

// inKey reports whether the text at the position is a key, which is never substituted: in
// Telegraf substitution works on the parsed document's string values only.
func (e *expander) inKey() bool {
	if e.ctx == ctxBare {
		return e.keyPos
	}
	return e.strKey
}

// dollar handles a $ in a value: a reference, or a $ that is text.
func (e *expander) dollar() {
	r := &e.res
	repl, n, f := r.one(e.in[e.pos:e.segmentEnd()], modeTop)
	switch {
	case f == failRequired:
		msg := r.reqMsg
		if msg == "" {
			msg = "required environment variable is unset or empty"
		}
		r.notes = append(r.notes, Problem{Var: r.reqName, Msg: msg})
		r.reqName, r.reqMsg = "", ""
	case n == 0:
		n = 1
		repl = "$"
	}
	e.out.WriteString(repl)
	e.pos += n
	for _, p := range r.notes {
		p.Line, p.Key = e.line, e.key
		e.problems = append(e.problems, p)
	}
	r.notes = r.notes[:0]
}

// segmentEnd is where the text that a reference at the position may reach ends: the end of
// the line, of the string, or of the bare text before a string or a comment. Telegraf
// matches references in each string value on its own.
func (e *expander) segmentEnd() int {
	rest := e.in[e.pos:]
	var end int
	switch e.ctx {
	case ctxBare:
		end = strings.IndexAny(rest, "\"'#\n")
	case ctxLiteral:
		end = strings.IndexAny(rest, "'\n")
	case ctxMultiLiteral:
		end = minIndex(strings.Index(rest, "'''"), strings.IndexByte(rest, '\n'))
	default:
		end = basicEnd(rest, e.ctx == ctxMultiBasic)
	}
	if end < 0 {
		return len(e.in)
	}
	return e.pos + end
}

// basicEnd finds the closing quote of a basic string, or the end of the line, skipping
// escapes.
func basicEnd(s string, multi bool) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] != '\n':
			i++
		case s[i] == '\n':
			return i
		case s[i] == '"' && (!multi || strings.HasPrefix(s[i:], `"""`)):
			return i
		}
	}
	return -1
}

func minIndex(a, b int) int {
	if a < 0 || (b >= 0 && b < a) {
		return b
	}
	return a
}

// quote writes val in the way the current context requires; a value that cannot stand
// there is a problem and is written as nothing.
func (e *expander) quote(name, val string) string {
	fail := func(msg string) string {
		e.res.notes = append(e.res.notes, Problem{Var: name, Msg: msg})
		return ""
	}
	switch e.ctx {
	case ctxBasic, ctxMultiBasic:
		var b strings.Builder
		writeEscaped(&b, val)
		return b.String()
	case ctxLiteral:
		if strings.ContainsAny(val, "'\n\r") {
			return fail("the value contains a ' or a line break and cannot stand in a literal '...' string: use a \"...\" string")
		}
	case ctxMultiLiteral:
		if strings.Contains(val, "'''") || strings.ContainsAny(val, "\n\r") {
			return fail("the value contains ''' or a line break and cannot stand in a literal '''...''' string: use a \"...\" string")
		}
	default:
		if strings.ContainsAny(val, "\n\r") {
			return fail("the value contains a line break, which is allowed only inside a quoted string")
		}
	}
	return val
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
