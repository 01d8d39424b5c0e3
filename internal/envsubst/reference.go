package envsubst

import "strings"

// This file holds the meaning of one reference, as Telegraf 1.39.3 gives it (its config
// uses compose-go's template package with a replacement function of its own):
//
//   - $$ is a $.
//   - $NAME takes the longest run of letters, digits and _ after the $, starting with a
//     letter or _: "$HOST.example" is HOST, "$HOST_1x" is HOST_1x.
//   - ${NAME} and ${NAME<op>arg}, op one of :- - :? ? :+ +.
//   - A $ followed by anything else is text; a ${ that starts no valid reference (${1},
//     ${A:x}, an unterminated ${A) is kept as written.
//   - An unset $NAME or ${NAME} is kept as written; a set but empty one is empty.
//
// Telegraf's pattern takes everything from an operator up to the last } of the line, then
// cuts the reference at its own closing brace and substitutes the text after it with the
// library's plain rules, under which an unset variable becomes empty and a ${ that starts
// no reference fails the whole match, which is then kept as written. This is reproduced
// here, because a config that Telegraf reads one way must not be read another way.

// refMode says how a reference whose variable is unset, or which is malformed, is written.
type refMode int

const (
	// modeTop is Telegraf's own rule, for references written in the config text: an unset
	// variable and a malformed reference are kept as written.
	modeTop refMode = iota
	// modeInner is the library's rule, for references inside a default or after a
	// reference with an operator: an unset variable is empty, and a malformed reference
	// fails the enclosing one.
	modeInner
)

// failure is why a reference could not be replaced.
type failure int

const (
	failNone     failure = iota
	failInvalid          // a ${ that starts no valid reference
	failRequired         // ${NAME:?msg} or ${NAME?msg} whose variable is missing
)

// resolver expands references. quote writes a value from the environment in the form the
// surrounding TOML needs; text around references is copied as it is, since it is already
// written in that form.
type resolver struct {
	lookup LookupFunc
	quote  func(name, val string) string
	// notes collects warnings and problems; their lines are set by the caller.
	notes []Problem
	// reqName and reqMsg describe the first failRequired.
	reqName, reqMsg string
}

// expandAll substitutes every reference in s under mode, as compose-go's Substitute does.
func (r *resolver) expandAll(s string, mode refMode) (string, failure) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), failNone
		}
		b.WriteString(s[:i])
		repl, n, f := r.one(s[i:], mode)
		if f != failNone {
			return "", f
		}
		if n == 0 { // a $ that starts nothing
			b.WriteByte('$')
			n = 1
		}
		b.WriteString(repl)
		s = s[i+n:]
	}
}

// one replaces the reference at the start of s, which begins with $, and says how many
// bytes it took; 0 means that the $ starts no reference and is text. In modeTop a failure
// other than failRequired is answered by keeping the reference as written.
func (r *resolver) one(s string, mode refMode) (string, int, failure) {
	n, kind := matchRef(s)
	if n == 0 {
		return "", 0, failNone
	}
	notes := len(r.notes)
	repl, f := r.replace(s[:n], kind, mode)
	if f == failInvalid && mode == modeTop {
		r.notes = r.notes[:notes] // nothing of the match was replaced
		return s[:n], n, failNone
	}
	return repl, n, f
}

// refKind is what the pattern matched.
type refKind int

const (
	refEscaped refKind = iota // $$
	refNamed                  // $NAME
	refBraced                 // ${NAME}
	refOp                     // ${NAME<op>...}
	refInvalid                // ${ that starts no reference
)

// matchRef finds the length of Telegraf's pattern at the start of s (which begins with $),
// or 0 when it does not match there.
func matchRef(s string) (int, refKind) {
	if len(s) < 2 {
		return 0, 0
	}
	switch c := s[1]; {
	case c == '$':
		return 2, refEscaped
	case nameStart(c):
		return 1 + nameLen(s[1:]), refNamed
	case c != '{':
		return 0, 0
	}
	if len(s) < 3 || !nameStart(s[2]) {
		return 2, refInvalid
	}
	k := 2 + nameLen(s[2:])
	if k < len(s) && s[k] == '}' {
		return k + 1, refBraced
	}
	op := k
	if op < len(s) && s[op] == ':' {
		op++
	}
	if op >= len(s) || !strings.ContainsRune("-+?", rune(s[op])) {
		return 2, refInvalid
	}
	// The argument is greedy: it runs to the last } of the line.
	last := strings.LastIndexByte(s, '}')
	if last <= op {
		return 2, refInvalid
	}
	return last + 1, refOp
}

// replace gives the replacement of one match m, as compose-go's DefaultReplacementAppliedFunc
// with Telegraf's wrapper does.
func (r *resolver) replace(m string, kind refKind, mode refMode) (string, failure) {
	switch kind {
	case refEscaped:
		return "$", failNone
	case refInvalid:
		return "", failInvalid
	case refNamed:
		return r.variable(m, m[1:], mode), failNone
	case refBraced:
		return r.variable(m, m[2:len(m)-1], mode), failNone
	}
	rest := ""
	if c := closingBrace(m); c >= 0 {
		m, rest = m[:c+1], m[c+1:]
	}
	body := m[2 : len(m)-1]
	name := body[:nameLen(body)]
	val, f := r.operator(name, body[len(name):])
	if f != failNone {
		return "", f
	}
	tail, f := r.expandAll(rest, modeInner)
	if f != failNone {
		return "", f
	}
	return val + tail, failNone
}

// variable is the value of a reference without operator. whole is the reference as
// written, kept in modeTop when the variable is unset.
func (r *resolver) variable(whole, name string, mode refMode) string {
	if v, ok := r.lookup(name); ok {
		return r.quote(name, v)
	}
	if mode == modeTop {
		r.notes = append(r.notes, Problem{Var: name, Warning: true,
			Msg: "environment variable " + name + " is not set: " + whole + " is kept as written, as Telegraf keeps it"})
		return whole
	}
	r.notes = append(r.notes, Problem{Var: name, Warning: true,
		Msg: "environment variable " + name + " is not set: it is replaced by nothing, as Telegraf replaces it there"})
	return ""
}

// operator applies one of :- - :? ? :+ + to name; op starts with the operator.
func (r *resolver) operator(name, op string) (string, failure) {
	sym := op[:1]
	if sym == ":" {
		sym = op[:2]
	}
	arg, f := r.expandAll(op[len(sym):], modeInner)
	if f != failNone {
		return "", f
	}
	v, set := r.lookup(name)
	full := set && v != ""
	switch sym {
	case ":-", "-":
		if !set || (sym == ":-" && v == "") {
			return arg, failNone
		}
	case ":+", "+":
		if full || (sym == "+" && set) {
			return arg, failNone
		}
	case ":?", "?":
		if !set || (sym == ":?" && !full) {
			if r.reqName == "" {
				r.reqName, r.reqMsg = name, arg
			}
			return "", failRequired
		}
	}
	return r.quote(name, v), failNone
}

// closingBrace is the index of the } that closes the ${ at the start of s, counting only
// ${ as an opening (as compose-go does), or -1.
func closingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '}' {
			depth--
			if depth == 0 {
				return i
			}
		}
		if strings.HasPrefix(s[i:], "${") {
			depth++
			i++
		}
	}
	return -1
}

func nameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// nameLen is the length of the variable name at the start of s, 0 when there is none.
func nameLen(s string) int {
	if s == "" || !nameStart(s[0]) {
		return 0
	}
	i := 1
	for i < len(s) && (nameStart(s[i]) || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	return i
}
