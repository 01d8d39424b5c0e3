package exec

import (
	"bytes"
	"errors"
	"strings"
	"time"
)

// maxStderr is how much of a failed command's stderr an error quotes: its first line, cut
// to 512 bytes, as Telegraf does, so a chatty script cannot flood the log.
const maxStderr = 512

// grace is the time between SIGTERM and SIGKILL after a timeout: 5 s, as in Telegraf.
func (e *Exec) grace() time.Duration {
	if e.killGrace <= 0 {
		return 5 * time.Second
	}
	return e.killGrace
}

func firstLine(b []byte) []byte {
	b = bytes.TrimSpace(bytes.ReplaceAll(b, []byte("\r"), nil))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > maxStderr {
		b = append(b[:maxStderr:maxStderr], "..."...)
	}
	return b
}

// splitWords splits a command line into words the way a POSIX shell does, without
// expansions: single quotes keep everything, double quotes keep all but \" \\ \$ \`, and
// a backslash outside quotes escapes the next character.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
			continue
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New("unterminated backslash escape")
			}
			i++
			cur.WriteByte(line[i])
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single-quoted string")
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			n, err := doubleQuoted(line[i+1:], &cur)
			if err != nil {
				return nil, err
			}
			i += n
		default:
			cur.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// doubleQuoted copies a double-quoted string's contents, returning how many bytes it used
// including the closing quote.
func doubleQuoted(s string, cur *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
			i++
			cur.WriteByte(s[i])
		default:
			cur.WriteByte(c)
		}
	}
	return 0, errors.New("unterminated double-quoted string")
}
