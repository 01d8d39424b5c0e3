package cardinality

import (
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/morse-agent/morse"
)

// observeLine observes the tags of a metric held as line-protocol text without expanding
// it, and reports whether the action applies to one of its keys. Keys and values are read
// in place; only a key or measurement written with a backslash escape is copied.
func (g *Guard) observeLine(lt morse.LineText) bool {
	head, _ := lt.Split() // measurement[,key=value...]
	end := nextUnescaped(head, 0, ',')
	ms := g.t.measurement(unescape(head[:end]))
	acting := false
	for i := 0; end < len(head); i++ {
		ks := end + 1
		eq := nextUnescaped(head, ks, '=')
		end = nextUnescaped(head, eq+1, ',')
		key, value := unescape(head[ks:min(eq, len(head))]), head[min(eq+1, end):end]
		if g.observe(g.t.recentKey(ms, i, key), hashEscaped(value)) {
			acting = true
		}
	}
	return acting
}

// nextUnescaped returns the index of the first c at or after i that no backslash escapes,
// or len(s). Byte searches, which take many bytes a step, find it when no backslash comes
// first, as in most text.
func nextUnescaped(s string, i int, c byte) int {
	if i >= len(s) {
		return len(s)
	}
	j := strings.IndexByte(s[i:], c)
	if j < 0 {
		j = len(s) - i
	}
	if strings.IndexByte(s[i:i+j], '\\') < 0 {
		return i + j
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case c:
			return i
		}
	}
	return len(s)
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
