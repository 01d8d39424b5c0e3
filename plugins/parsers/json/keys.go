package json

import (
	"errors"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// keys matches flattened keys against tag_keys or json_string_fields. Its globs mean what
// they mean in namepass, because the filter package runs them (its matcher is not
// exported, so a filter that tests a metric's name is asked about a metric named after the
// key). A nil *keys matches nothing.
type keys struct {
	exact []string       // patterns without a wildcard, which most configs list
	stars [][]string     // patterns whose only wildcard is *, split at each *
	globs *filter.Filter // the others; nil if none
}

// compileKeys compiles the patterns of the option named key.
func compileKeys(key string, patterns []string) (*keys, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	k := &keys{}
	var globs []string
	for _, p := range patterns {
		switch {
		case strings.ContainsAny(p, `?[\`):
			globs = append(globs, p)
		case strings.Contains(p, "*"):
			k.stars = append(k.stars, strings.Split(p, "*"))
		default:
			k.exact = append(k.exact, p)
		}
	}
	if len(globs) == 0 {
		return k, nil
	}
	f, err := filter.New(filter.Config{NamePass: globs})
	if err != nil {
		var fe *morse.FieldError
		if errors.As(err, &fe) {
			err = fe.Err
		}
		return nil, morse.Errorf(key, "%w", err)
	}
	k.globs = f
	return k, nil
}

// match reports whether s matches one of the patterns.
func (k *keys) match(s string) bool {
	if k == nil {
		return false
	}
	for _, e := range k.exact {
		if e == s {
			return true
		}
	}
	for _, parts := range k.stars {
		if matchStars(parts, s) {
			return true
		}
	}
	return k.globs != nil && k.globs.Selects(morse.NewMetric(s, nil, nil, time.Time{}))
}

// matchStars matches s against a pattern split at its stars: the first part is a prefix,
// the last a suffix, and the others appear in order between them.
func matchStars(parts []string, s string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}
