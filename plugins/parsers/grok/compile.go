package grok

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
)

// pattern is one of grok_patterns, compiled.
type pattern struct {
	re *regexp.Regexp
	// atStart is re anchored at the start of the line. A match that starts there is the
	// leftmost one, the one re finds, with the same captures; most lines of a log match
	// there, and Go's regexp finds an anchored match many times faster, as it does not
	// start a new attempt at every byte while the first is still running.
	atStart *regexp.Regexp
	// named tells whether the expression has a named group: a pattern without one reads
	// nothing, so a line it matches goes on to the next pattern, as in Telegraf.
	named bool
	// captures are the capture names to read, in the order they first appear, each with the
	// last group of that name (where a name repeats, the last group's text is the value,
	// empty or not, as Telegraf's grok library does) and its modifier. Dropped names are
	// left out.
	captures []capture
	// hasTime tells whether a capture is a timestamp, so that a line without one asks the
	// clock for the time once.
	hasTime bool
}

// capture is one capture name of a pattern.
type capture struct {
	name  string
	group int
	mod   modifier
}

// internalName is the name a grok_patterns entry is defined under, as a custom pattern,
// so that it inherits modifiers as every custom pattern does.
func internalName(i int) string { return fmt.Sprintf("GROK_INTERNAL_PATTERN_%d", i) }

// compile builds the patterns of o, reporting every problem.
func compile(o *Options) ([]*pattern, error) {
	l := newLibrary()
	var errs []error
	if err := l.addText(o.GrokCustomPatterns, "grok_custom_patterns", true); err != nil {
		errs = append(errs, err)
	}
	grokPatterns := o.patterns()
	if len(grokPatterns) == 0 {
		errs = append(errs, morse.Errorf("grok_patterns", "no pattern: every entry is empty"))
	}
	for i, p := range grokPatterns {
		l.defs[internalName(i)] = &definition{raw: p, text: p, key: "grok_patterns", custom: true, label: fmt.Sprintf("%q", p)}
	}
	for _, path := range o.GrokCustomPatternFiles {
		if err := l.addFile(path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.prepare(); err != nil {
		errs = append(errs, err)
	}
	out := make([]*pattern, 0, len(grokPatterns))
	for i, text := range grokPatterns {
		p, err := l.pattern(internalName(i))
		if errors.Is(err, errReported) {
			continue
		}
		if err != nil {
			errs = append(errs, morse.Errorf("grok_patterns", "%q: %w", text, err))
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// pattern compiles the prepared pattern name.
func (l *library) pattern(name string) (*pattern, error) {
	expr, err := l.expand(name)
	if err != nil {
		return nil, err
	}
	expr, err = withoutUnnamedGroups(expr)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	atStart, err := regexp.Compile(`^(?:` + expr + `)`)
	if err != nil {
		return nil, err
	}
	p := &pattern{re: re, atStart: atStart}
	mods := l.mods[name]
	for group, alias := range re.SubexpNames() {
		if alias == "" {
			continue
		}
		p.named = true
		capName := alias
		if orig, ok := l.aliases[alias]; ok {
			capName = orig
		}
		i := slices.IndexFunc(p.captures, func(c capture) bool { return c.name == capName })
		if i < 0 {
			p.captures = append(p.captures, capture{name: capName, mod: mods.of(capName)})
			i = len(p.captures) - 1
		}
		p.captures[i].group = group
	}
	p.captures = slices.DeleteFunc(p.captures, func(c capture) bool { return c.mod.kind == kindDrop })
	for _, c := range p.captures {
		if c.mod.kind >= kindEpoch {
			p.hasTime = true
		}
	}
	return p, nil
}

// withoutUnnamedGroups rewrites expr with its unnamed groups, "(...)", as non-capturing
// ones. The base patterns are full of them (IPV6 has dozens) and nothing reads them, but
// Go's regexp copies every group's position for each thread of a match: taking them out
// makes a match several times faster, and matches the same text with the same named
// captures. The rewrite is made on the text, as Go's parser reads it (FuzzNonCapturing
// compares the two), and checked: if the result does not parse, has an unnamed capture
// left or other named ones, expr is kept as it is.
func withoutUnnamedGroups(expr string) (string, error) {
	orig, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", err
	}
	rewritten := nonCapturing(expr)
	re, err := syntax.Parse(rewritten, syntax.Perl)
	if err != nil || !slices.Equal(captureNames(re, nil), slices.DeleteFunc(captureNames(orig, nil), func(n string) bool { return n == "" })) {
		return expr, nil
	}
	return rewritten, nil
}

// captureNames appends the names of re's captures, "" for an unnamed one, in order.
func captureNames(re *syntax.Regexp, names []string) []string {
	if re.Op == syntax.OpCapture {
		names = append(names, re.Name)
	}
	for _, sub := range re.Sub {
		names = captureNames(sub, names)
	}
	return names
}

// nonCapturing writes "(?:" for each "(" of expr that opens an unnamed group: one that is
// not escaped, quoted (\Q...\E), in a character class or followed by '?'.
func nonCapturing(expr string) string {
	var b strings.Builder
	b.Grow(len(expr) + len(expr)/8)
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '\\' && strings.HasPrefix(expr[i:], `\Q`):
			end := strings.Index(expr[i:], `\E`)
			if end < 0 {
				end = len(expr) - i - 2
			}
			b.WriteString(expr[i : i+end+2])
			i += end + 1
		case c == '\\':
			b.WriteString(expr[i:min(i+2, len(expr))])
			i++
		case c == '[':
			end := classEnd(expr, i)
			b.WriteString(expr[i:end])
			i = end - 1
		case c == '(' && !strings.HasPrefix(expr[i:], "(?"):
			b.WriteString("(?:")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// classEnd returns the index after the character class that starts at expr[start].
func classEnd(expr string, start int) int {
	i := start + 1
	if i < len(expr) && expr[i] == '^' {
		i++
	}
	if i < len(expr) && expr[i] == ']' { // a ']' first is a member
		i++
	}
	for i < len(expr) {
		switch {
		case expr[i] == '\\':
			i += 2
		case strings.HasPrefix(expr[i:], "[:"):
			if end := strings.Index(expr[i+2:], ":]"); end >= 0 {
				i += end + 4
			} else {
				i++
			}
		case expr[i] == ']':
			return i + 1
		default:
			i++
		}
	}
	return len(expr)
}
