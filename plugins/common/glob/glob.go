// Package glob matches tag and field keys against the glob patterns that plugins take,
// such as converter's `integer = ["scboard_*"]`.
//
// The patterns mean exactly what they mean in namepass and the other filters, because the
// filter package compiles and runs them: its matcher is not exported, so a Matcher holds a
// filter that tests nothing but the name of a metric, and asks it about a metric named after
// the key. That metric is a value on the stack, so a match allocates nothing. Patterns
// without a wildcard, which most configs list, are compared directly, which costs less.
package glob

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// Matcher reports whether a string matches any of its patterns. A nil *Matcher matches
// nothing, which is what an option with no pattern means. It is safe for concurrent use.
type Matcher struct {
	exact []string       // patterns without a wildcard or escape
	f     *filter.Filter // the others; nil if none
}

// Compile compiles patterns: * matches any run of characters, ? one character, [abc] and
// [a-z] one of a class, [!a-z] one outside it, and \ makes the next character literal. No
// pattern gives a nil Matcher. A bad pattern gives an error that wraps a *morse.FieldError
// naming option.
func Compile(option string, patterns []string) (*Matcher, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	m := &Matcher{}
	var globs []string
	for _, p := range patterns {
		if strings.ContainsAny(p, `*?[\`) {
			globs = append(globs, p)
		} else {
			m.exact = append(m.exact, p)
		}
	}
	if len(globs) == 0 {
		return m, nil
	}
	f, err := filter.New(filter.Config{NamePass: globs})
	if err != nil {
		// The filter names its own option (namepass); the user wrote option.
		var fe *morse.FieldError
		if errors.As(err, &fe) {
			return nil, morse.Errorf(option, "%v", fe.Err)
		}
		return nil, morse.Errorf(option, "%v", err)
	}
	m.f = f
	return m, nil
}

// Match reports whether s matches one of the patterns.
func (m *Matcher) Match(s string) bool {
	if m == nil {
		return false
	}
	if slices.Contains(m.exact, s) {
		return true
	}
	if m.f == nil {
		return false
	}
	_, ok := m.f.Apply(morse.NewMetric(s, nil, nil, time.Time{}))
	return ok
}
