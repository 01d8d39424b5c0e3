package json

import (
	"bytes"
	stdjson "encoding/json"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// safe marks the ASCII bytes that encoding/json writes as they are in a string: not the
// quote, the backslash, control bytes, nor <, > and & (escaped for HTML by default).
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendString writes s as a JSON string exactly as encoding/json's Marshal does: HTML
// characters as \u003c and friends, invalid UTF-8 as \ufffd, and U+2028 and U+2029
// escaped, so that the output matches Telegraf's byte for byte.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 end a line in JavaScript; encoding/json escapes them.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendNested writes the JSON document that s holds, compacted, or reports false when s is
// not valid JSON. Telegraf decodes and re-encodes it, which also sorts object keys and
// rewrites numbers; compacting keeps the document as it was written.
func appendNested(dst []byte, s string) ([]byte, bool) {
	var buf bytes.Buffer
	if err := stdjson.Compact(&buf, []byte(s)); err != nil {
		return dst, false
	}
	return append(dst, buf.Bytes()...), true
}
