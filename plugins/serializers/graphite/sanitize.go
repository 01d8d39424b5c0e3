package graphite

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// defaultStrict is Telegraf's strict sanitizing class: what it matches becomes '_'.
const defaultStrict = `[^a-zA-Z0-9-:._=\p{L}]`

// The classes Telegraf sanitizes with, as tables of the ASCII characters they let
// through; beyond ASCII each lets letters through (\p{L}) and nothing else. The tables are
// read from the regular expressions themselves, so that they cannot drift from them;
// TestSanitizeClasses compares the two on every rune class.
var (
	strictASCII     = asciiAllowed(defaultStrict)
	compatibleName  = asciiAllowed(`[^ "-:\<>-\]_a-~\p{L}]`)
	compatibleValue = asciiAllowed(`[^ -:<-~\p{L}]`)
)

func asciiAllowed(class string) *[utf8.RuneSelf]bool {
	re := regexp.MustCompile(class)
	var t [utf8.RuneSelf]bool
	for c := range utf8.RuneSelf {
		t[c] = !re.MatchString(string(rune(c)))
	}
	return &t
}

// sanitize rewrites dst[mark:] with Telegraf's strict rules, in this order: '/', '@' and
// '*' become '-'; '\' is removed and ".." becomes "." (one pass, left to right); then
// every character of the strict class becomes '_'.
func (s *Serializer) sanitize(dst []byte, mark int) []byte {
	w := mark
	for r := mark; r < len(dst); {
		c := dst[r]
		switch {
		case c == '\\':
			r++
			continue
		case c == '.' && r+1 < len(dst) && dst[r+1] == '.':
			dst[w] = '.'
			w, r = w+1, r+2
			continue
		case c == '/' || c == '@' || c == '*':
			c = '-'
		}
		if s.strict != nil || c < utf8.RuneSelf {
			if s.strict == nil && !strictASCII[c] {
				c = '_'
			}
			dst[w] = c
			w, r = w+1, r+1
			continue
		}
		ru, size := utf8.DecodeRune(dst[r:])
		if ru == utf8.RuneError || !unicode.IsLetter(ru) {
			dst[w] = '_'
			w, r = w+1, r+size
			continue
		}
		w += copy(dst[w:], dst[r:r+size])
		r += size
	}
	dst = dst[:w]
	if s.strict == nil {
		return dst
	}
	replaced := s.strict.ReplaceAllLiteralString(string(dst[mark:]), "_")
	return append(dst[:mark], replaced...)
}

// compatiblePair is key=value with Graphite's own rules for tags: characters of the name
// or value classes become '_', and a value's leading '~'s are removed.
func compatiblePair(key, value string) string {
	var b strings.Builder
	b.Grow(len(key) + 1 + len(value))
	classify(&b, key, compatibleName)
	b.WriteByte('=')
	mark := b.Len()
	classify(&b, value, compatibleValue)
	out := b.String()
	return out[:mark] + strings.TrimLeft(out[mark:], "~")
}

// classify writes s with each character the table does not let through as '_'.
func classify(b *strings.Builder, s string, ascii *[utf8.RuneSelf]bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !ascii[c] {
				c = '_'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || !unicode.IsLetter(r) {
			b.WriteByte('_')
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}
