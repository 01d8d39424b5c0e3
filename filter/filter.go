// Package filter selects and trims the metrics that pass through a plugin, with Telegraf's
// namepass, tagpass, fieldinclude and related options.
package filter

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// Filter decides which metrics pass a plugin and trims their fields and tags, with Telegraf's
// semantics:
//
//   - namepass and namedrop test the measurement name;
//   - tagpass and tagdrop test tags: a metric passes tagpass when any listed tag has a value
//     matching any of that tag's patterns, and tagdrop drops it on the same condition;
//   - then fieldinclude and fieldexclude keep or remove fields, and taginclude and tagexclude
//     keep or remove tags. A metric that is left with no field is rejected.
//
// Patterns are globs: * matches any run of characters, ? one character, [abc], [a-z] and
// [!a-z] (or [^a-z]) one character of a class, and \ makes the next character literal.
// Unlike shell globs, * also matches dots and slashes. Telegraf's {a,b} alternatives are not
// supported; write two patterns instead.
//
// A Filter is immutable and safe for concurrent use. A nil *Filter passes everything.
type Filter struct {
	namePass, nameDrop         *matcher
	tagPass, tagDrop           []tagMatcher
	fieldInclude, fieldExclude *matcher
	tagInclude, tagExclude     *matcher
	empty                      bool // no condition at all: Apply returns at once
}

// tagMatcher tests the value of one tag.
type tagMatcher struct {
	key string
	m   *matcher
}

// New compiles a filter. Its error joins one *FieldError for each bad pattern, keyed
// like the config ("namepass", "tagpass.cpu"), so that the loader can place each one.
func New(c Config) (*Filter, error) {
	var errs []error
	compile := func(key string, patterns []string) *matcher {
		m, err := compileMatcher(patterns)
		if err != nil {
			errs = append(errs, &morse.FieldError{Key: key, Err: err})
		}
		return m
	}
	compileTags := func(key string, tags map[string][]string) []tagMatcher {
		var out []tagMatcher
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			if m := compile(key+"."+k, tags[k]); m != nil {
				out = append(out, tagMatcher{key: k, m: m})
			}
		}
		return out
	}
	f := &Filter{
		namePass:     compile("namepass", c.NamePass),
		nameDrop:     compile("namedrop", c.NameDrop),
		tagPass:      compileTags("tagpass", c.TagPass),
		tagDrop:      compileTags("tagdrop", c.TagDrop),
		fieldInclude: compile("fieldinclude", c.FieldInclude),
		fieldExclude: compile("fieldexclude", c.FieldExclude),
		tagInclude:   compile("taginclude", c.TagInclude),
		tagExclude:   compile("tagexclude", c.TagExclude),
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	f.empty = f.namePass == nil && f.nameDrop == nil && f.tagPass == nil && f.tagDrop == nil &&
		f.fieldInclude == nil && f.fieldExclude == nil && f.tagInclude == nil && f.tagExclude == nil
	return f, nil
}

// Empty reports whether the filter passes every metric unchanged.
func (f *Filter) Empty() bool { return f == nil || f.empty }

// Apply filters one metric. It reports false when the metric is rejected, and then the
// returned metric means nothing. A metric that the filter does not change is returned as it
// is, without allocating; one that it trims gets new field or tag slices, and the slices of m
// are never modified, because other outputs may hold the same metric.
func (f *Filter) Apply(m morse.Metric) (morse.Metric, bool) {
	if f == nil || f.empty {
		return m, true
	}
	if lt, ok := m.Line(); ok {
		if f.NamesOnly() {
			return m, f.selectsName(lt.Name())
		}
		m = m.Expanded()
	}
	if !f.selects(m) {
		return m, false
	}
	return f.trimmed(m)
}

// Trim applies fieldinclude, fieldexclude, taginclude and tagexclude to a metric that
// Selects passed, as Telegraf's processors and aggregators do after selecting (its
// Filter.Modify). It reports false when no field is left. Like Apply, it never modifies
// the slices of m.
func (f *Filter) Trim(m morse.Metric) (morse.Metric, bool) {
	if !f.Trims() {
		return m, true
	}
	if _, ok := m.Line(); ok {
		m = m.Expanded()
	}
	return f.trimmed(m)
}

// Trims reports whether the filter removes fields or tags. A nil filter removes none.
func (f *Filter) Trims() bool {
	return f != nil && (f.fieldInclude != nil || f.fieldExclude != nil || f.tagInclude != nil || f.tagExclude != nil)
}

// trimmed is Trim of an expanded metric.
func (f *Filter) trimmed(m morse.Metric) (morse.Metric, bool) {
	if f.fieldInclude != nil || f.fieldExclude != nil {
		fields, changed := trim(m.Fields(), f.fieldInclude, f.fieldExclude, func(fl morse.Field) string { return fl.Key })
		if len(fields) == 0 {
			return m, false
		}
		if changed {
			m = m.WithFields(fields)
		}
	}
	if f.tagInclude != nil || f.tagExclude != nil {
		// A subset of sorted tags is still sorted, so the result needs no sorting.
		if tags, changed := trim(m.Tags(), f.tagInclude, f.tagExclude, func(t morse.Tag) string { return t.Key }); changed {
			m = m.WithSortedTags(tags)
		}
	}
	return m, true
}

// NamesOnly reports whether the filter tests nothing but the measurement name, so that it
// can judge a line metric without expanding it. A nil filter tests nothing, so it is true.
func (f *Filter) NamesOnly() bool {
	return f == nil || f.tagPass == nil && f.tagDrop == nil && f.fieldInclude == nil && f.fieldExclude == nil &&
		f.tagInclude == nil && f.tagExclude == nil
}

// PassesNamed reports whether the filter passes only metrics whose names namepass lists,
// judged without expanding a line metric. Such a filter spares its owner the metrics it
// would not take.
func (f *Filter) PassesNamed() bool {
	return f != nil && f.namePass != nil && f.NamesOnly()
}

// Selects reports whether the filter passes m as a whole (namepass, namedrop, tagpass,
// tagdrop), without trimming its fields or tags: processors and aggregators pass over what
// it does not select, and Trim what it does. A nil filter selects everything.
func (f *Filter) Selects(m morse.Metric) bool {
	if f == nil || f.empty {
		return true
	}
	if lt, ok := m.Line(); ok && f.NamesOnly() {
		return f.selectsName(lt.Name())
	}
	return f.selects(m)
}

// selectsName applies namepass and namedrop.
func (f *Filter) selectsName(name string) bool {
	return (f.namePass == nil || f.namePass.match(name)) && (f.nameDrop == nil || !f.nameDrop.match(name))
}

// selects applies the conditions that keep or reject a metric as a whole.
func (f *Filter) selects(m morse.Metric) bool {
	if !f.selectsName(m.Name()) {
		return false
	}
	if f.tagPass != nil && !matchTags(m, f.tagPass) {
		return false
	}
	if f.tagDrop != nil && matchTags(m, f.tagDrop) {
		return false
	}
	return true
}

// matchTags reports whether any listed tag of m has a matching value.
func matchTags(m morse.Metric, tms []tagMatcher) bool {
	for _, tm := range tms {
		if v, ok := m.Tag(tm.key); ok && tm.m.match(v) {
			return true
		}
	}
	return false
}

// trim keeps the items whose key is included and not excluded. It returns items itself when
// it keeps them all, and builds a new slice only from the first item that goes.
func trim[T any](items []T, include, exclude *matcher, key func(T) string) ([]T, bool) {
	keep := func(it T) bool {
		k := key(it)
		return (include == nil || include.match(k)) && (exclude == nil || !exclude.match(k))
	}
	for i, it := range items {
		if keep(it) {
			continue
		}
		out := make([]T, i, len(items)-1)
		copy(out, items[:i])
		for _, rest := range items[i+1:] {
			if keep(rest) {
				out = append(out, rest)
			}
		}
		return out, true
	}
	return items, false
}

// matcher tests a string against a list of patterns. Plain strings, which most filters hold,
// are compared directly or looked up in a set; only real globs run the glob matcher.
type matcher struct {
	exact []string            // few plain strings: a linear scan beats hashing
	set   map[string]struct{} // many plain strings
	globs []glob
}

// exactSetMin is the number of plain strings from which a map lookup is faster than comparing
// each string.
const exactSetMin = 8

// compileMatcher compiles patterns; no pattern gives a nil matcher, which callers read as
// "no condition".
func compileMatcher(patterns []string) (*matcher, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	m := &matcher{}
	var errs []error
	for _, p := range patterns {
		if !strings.ContainsAny(p, `*?[\`) {
			m.exact = append(m.exact, p)
			continue
		}
		g, err := compileGlob(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m.globs = append(m.globs, g)
	}
	if len(m.exact) >= exactSetMin {
		m.set = make(map[string]struct{}, len(m.exact))
		for _, s := range m.exact {
			m.set[s] = struct{}{}
		}
		m.exact = nil
	}
	return m, errors.Join(errs...)
}

func (m *matcher) match(s string) bool {
	if m.set != nil {
		if _, ok := m.set[s]; ok {
			return true
		}
	}
	if slices.Contains(m.exact, s) {
		return true
	}
	for i := range m.globs {
		if m.globs[i].match(s) {
			return true
		}
	}
	return false
}

// globKind selects a fast path for the common shapes of patterns.
type globKind uint8

const (
	globAny      globKind = iota // "*"
	globPrefix                   // "abc*"
	globSuffix                   // "*abc"
	globContains                 // "*abc*"
	globExact                    // a\*b: a plain string written with escapes
	globGeneral
)

// glob is one compiled pattern.
type glob struct {
	kind globKind
	lit  string  // the literal of the fast paths
	toks []token // the program of globGeneral
}

type tokenKind uint8

const (
	tokLiteral tokenKind = iota
	tokOne               // ?
	tokStar              // *
	tokClass             // [...]
)

type token struct {
	kind   tokenKind
	lit    string      // tokLiteral
	ranges []runeRange // tokClass
	negate bool        // tokClass
}

type runeRange struct{ lo, hi rune }

// compileGlob parses a pattern into tokens and picks a fast path when its shape allows one.
func compileGlob(p string) (glob, error) {
	toks, err := parseGlob(p)
	if err != nil {
		return glob{}, fmt.Errorf("invalid pattern %q: %w", p, err)
	}
	isLit := func(i int) bool { return toks[i].kind == tokLiteral }
	isStar := func(i int) bool { return toks[i].kind == tokStar }
	switch {
	case len(toks) == 1 && isStar(0):
		return glob{kind: globAny}, nil
	case len(toks) == 2 && isLit(0) && isStar(1):
		return glob{kind: globPrefix, lit: toks[0].lit}, nil
	case len(toks) == 2 && isStar(0) && isLit(1):
		return glob{kind: globSuffix, lit: toks[1].lit}, nil
	case len(toks) == 3 && isStar(0) && isLit(1) && isStar(2):
		return glob{kind: globContains, lit: toks[1].lit}, nil
	case len(toks) == 1 && isLit(0):
		return glob{kind: globExact, lit: toks[0].lit}, nil
	}
	return glob{kind: globGeneral, toks: toks}, nil
}

// parseGlob splits a pattern into tokens, merging runs of literal characters and of stars.
func parseGlob(p string) ([]token, error) {
	var toks []token
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, token{kind: tokLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				return nil, errors.New("trailing backslash")
			}
			i++
			lit.WriteByte(p[i])
		case '*':
			flush()
			if len(toks) == 0 || toks[len(toks)-1].kind != tokStar {
				toks = append(toks, token{kind: tokStar})
			}
		case '?':
			flush()
			toks = append(toks, token{kind: tokOne})
		case '[':
			flush()
			t, n, err := parseClass(p[i+1:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			i += n
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return toks, nil
}

// parseClass parses the inside of [...] up to and including the closing bracket, and returns
// how many bytes it read. A ] right after [ or [! is a member, as in shells.
func parseClass(s string) (token, int, error) {
	t := token{kind: tokClass}
	i := 0
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		t.negate = true
		i++
	}
	first := true
	for {
		if i >= len(s) {
			return t, 0, errors.New("unterminated [")
		}
		if s[i] == ']' && !first {
			return t, i + 1, nil
		}
		first = false
		lo, n, err := classRune(s[i:])
		if err != nil {
			return t, 0, err
		}
		i += n
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, n, err = classRune(s[i+1:])
			if err != nil {
				return t, 0, err
			}
			i += 1 + n
			if hi < lo {
				return t, 0, fmt.Errorf("bad range %c-%c", lo, hi)
			}
		}
		t.ranges = append(t.ranges, runeRange{lo, hi})
	}
}

// classRune reads one possibly escaped character of a class.
func classRune(s string) (rune, int, error) {
	if s[0] == '\\' {
		if len(s) < 2 {
			return 0, 0, errors.New("unterminated [")
		}
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, n + 1, nil
	}
	r, n := utf8.DecodeRuneInString(s)
	return r, n, nil
}

func (t *token) matchRune(r rune) bool {
	for _, rg := range t.ranges {
		if r >= rg.lo && r <= rg.hi {
			return !t.negate
		}
	}
	return t.negate
}

func (g *glob) match(s string) bool {
	switch g.kind {
	case globAny:
		return true
	case globPrefix:
		return strings.HasPrefix(s, g.lit)
	case globExact:
		return s == g.lit
	case globSuffix:
		return strings.HasSuffix(s, g.lit)
	case globContains:
		return strings.Contains(s, g.lit)
	}
	return g.matchGeneral(s)
}

// matchGeneral is the classic wildcard algorithm: on a mismatch it lets the latest star take
// one more character and retries from there. Backtracking to the latest star only is enough,
// because an earlier star could only take characters that the latest one can take as well, so
// matching takes O(len(s)·len(pattern)) at worst and never allocates.
func (g *glob) matchGeneral(s string) bool {
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(g.toks) {
			t := &g.toks[ti]
			switch t.kind {
			case tokStar:
				starTi, starSi = ti, si
				ti++
				continue
			case tokLiteral:
				if strings.HasPrefix(s[si:], t.lit) {
					si += len(t.lit)
					ti++
					continue
				}
			default:
				if si < len(s) {
					r, n := utf8.DecodeRuneInString(s[si:])
					if t.kind == tokOne || t.matchRune(r) {
						si += n
						ti++
						continue
					}
				}
			}
		} else if si == len(s) {
			return true
		}
		if starTi < 0 || starSi >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starSi:])
		starSi += n
		ti, si = starTi+1, starSi
	}
}
