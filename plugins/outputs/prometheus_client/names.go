package prometheusclient

import (
	"strings"
	"unicode/utf8"
)

// The sanitization of names is Telegraf's (plugins/serializers/prometheus/convert.go): a
// legacy name keeps ASCII letters, digits, _ and (metric names only) :, an illegal first
// character is dropped, others become _, and leading and trailing _ are trimmed; a name
// left empty is not written. With name_sanitization = "utf8" a valid UTF-8 name is kept
// and written as the text format's encoder writes it, with _ for every character a legacy
// name cannot hold.
//
// The prometheus serializer (plugins/serializers/prometheus, on its way to main) has the
// same rules; when it lands, these give way to its exported ones.

// legal reports whether r may stand at position i of a legacy name; colons only in metric
// names.
func legal(r rune, i int, colon bool) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || colon && r == ':' || i > 0 && r >= '0' && r <= '9'
}

func legacyValid(name string, colon bool) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !legal(rune(name[i]), i, colon) {
			return false
		}
	}
	return true
}

// sanitizeName returns the name as written, or false for a name left empty. colon is true
// for metric names, false for label names.
func sanitizeName(name string, colon, utf8Names bool) (string, bool) {
	if legacyValid(name, colon) {
		return name, true
	}
	var b strings.Builder
	if utf8Names && name != "" && utf8.ValidString(name) {
		for i, r := range name {
			if legal(r, i, true) {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		return b.String(), true
	}
	for i, r := range name {
		switch {
		case legal(r, i, colon):
			b.WriteRune(r)
		case i > 0:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	return out, out != ""
}

// namer caches the sanitized names of the fields and tags it has seen, so that a write of
// names already seen allocates nothing. It is used under the store's lock.
type namer struct {
	utf8    bool
	metrics map[string]string // "" for a name that sanitizes to nothing
	labels  map[string]string
}

func newNamer(utf8Names bool) *namer {
	return &namer{utf8: utf8Names, metrics: map[string]string{}, labels: map[string]string{}}
}

// metric returns the sanitized metric name of name.
func (n *namer) metric(name string) (string, bool) { return n.get(n.metrics, name, true) }

// label returns the sanitized label name of name.
func (n *namer) label(name string) (string, bool) { return n.get(n.labels, name, false) }

func (n *namer) get(m map[string]string, name string, colon bool) (string, bool) {
	if s, ok := m[name]; ok {
		return s, s != ""
	}
	s, ok := sanitizeName(name, colon, n.utf8)
	if !ok {
		s = ""
	}
	if len(m) < maxNames {
		m[strings.Clone(name)] = s
	}
	return s, ok
}

// maxNames bounds each cache of the namer: past it, names are sanitized afresh each time,
// so that a field key that never repeats cannot grow it.
const maxNames = 1 << 16
