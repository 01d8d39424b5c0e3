package cardinality

import (
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/morse-agent/morse"
)

// observeLine observes the tags of a metric held as line-protocol text without expanding
// it, and reports whether the action applies to one of its keys. Keys and values are read
// in place, in one pass over the measurement and tag set; only a key or measurement written
// with a backslash escape is copied.
func (g *Guard) observeLine(lt morse.LineText) bool {
	s := lt.Text
	end, esc := scan(s, 0, ',', ' ')
	ms := g.t.measurement(unescapeIf(s[:end], esc))
	acting := false
	for i := 0; end < len(s) && s[end] == ','; i++ {
		eq, kesc := scan(s, end+1, '=', '=')
		key := unescapeIf(s[end+1:eq], kesc)
		vend, vesc := scan(s, min(eq+1, len(s)), ',', ' ')
		value := s[min(eq+1, vend):vend]
		end = vend
		ks := g.t.recentKey(ms, i, key)
		if act, settled := g.settled(ks); settled {
			acting = acting || act
			continue
		}
		if g.observe(ks, value, vesc) {
			acting = true
		}
	}
	return acting
}

// scan returns the index of the first a or b at or after i that no backslash escapes, or
// len(s), and whether it passed a backslash. Tokens of the tag set are short, so a plain
// loop beats byte searches, which cost a call each.
func scan(s string, i int, a, b byte) (int, bool) {
	esc := false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			esc = true
			i++
		case c == a || c == b:
			return i, esc
		}
	}
	return len(s), esc
}

// unescapeIf unescapes s if it holds an escape.
func unescapeIf(s string, esc bool) string {
	if esc {
		return unescape(s)
	}
	return s
}

// unescape drops the backslash of every escape; text without one comes back as it is.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hashEscaped hashes the unescaped text of s, so that a value hashes the same whether it
// arrived as text or as an expanded metric.
func hashEscaped(s string) uint64 {
	if strings.IndexByte(s, '\\') < 0 {
		return xxhash.Sum64String(s)
	}
	var d xxhash.Digest
	d.Reset()
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 || i+1 >= len(s) {
			_, _ = d.WriteString(s)
			return d.Sum64()
		}
		_, _ = d.WriteString(s[:i])
		_, _ = d.WriteString(s[i+1 : i+2])
		s = s[i+2:]
	}
}
