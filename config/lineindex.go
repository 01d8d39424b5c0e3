package config

import (
	"strconv"
	"strings"
)

// lineIndex maps key paths to the line where they are written, because the TOML library keeps
// its key positions private and merges the keys of all [[x]] tables of one name.
//
// A path is dotted, and every array element carries its index: the key "percpu" of the second
// [[inputs.cpu]] table is "inputs.cpu[1].percpu", and the third element of a multi-line array
// "servers" of the first [[outputs.x]] is "outputs.x[0].servers[2]". The decoder builds the
// same paths, so every problem it finds can be placed on its line.
type lineIndex struct {
	lines  map[string]int
	arrays map[string]int // how many [[x]] tables have been seen, by path without the index
}

// line returns the line of path, or of its closest written ancestor, or 0.
func (x *lineIndex) line(path string) int {
	for path != "" {
		if l, ok := x.lines[path]; ok {
			return l
		}
		path = parentPath(path)
	}
	return 0
}

// parentPath strips the last element of a path: an index or a key.
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i > 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

func joinPath(prefix, key string) string {
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	}
	return prefix + "." + key
}

func indexPath(prefix string, i int) string {
	return prefix + "[" + strconv.Itoa(i) + "]"
}

// indexScanner reads just enough TOML to find headers and keys. It runs only on text that the
// TOML parser accepted, so it may be lenient, but it must always make progress.
type indexScanner struct {
	s     string
	pos   int
	line  int
	table string // the indexed path of the current table
	idx   *lineIndex
}

// buildIndex scans text, which must be valid TOML, and records the line of every table header,
// key and array element.
func buildIndex(text string) *lineIndex {
	sc := &indexScanner{s: text, line: 1, idx: &lineIndex{lines: map[string]int{}, arrays: map[string]int{}}}
	for sc.pos < len(sc.s) {
		switch sc.s[sc.pos] {
		case '\n':
			sc.line++
			sc.pos++
		case ' ', '\t', '\r':
			sc.pos++
		case '#':
			sc.skipLine()
		case '[':
			sc.header()
			sc.skipLine()
		default:
			sc.keyValue(sc.table)
			sc.skipLine()
		}
	}
	return sc.idx
}

func (sc *indexScanner) set(path string) {
	sc.idx.lines[path] = sc.line
}

func (sc *indexScanner) setIfAbsent(path string) {
	if _, ok := sc.idx.lines[path]; !ok {
		sc.idx.lines[path] = sc.line
	}
}

func (sc *indexScanner) peek() byte {
	if sc.pos < len(sc.s) {
		return sc.s[sc.pos]
	}
	return 0
}

// skipLine moves to the line break that ends the current line, leaving it for the main loop
// to count.
func (sc *indexScanner) skipLine() {
	for sc.pos < len(sc.s) && sc.s[sc.pos] != '\n' {
		sc.pos++
	}
}

func (sc *indexScanner) skipSpaces() {
	for sc.pos < len(sc.s) && (sc.s[sc.pos] == ' ' || sc.s[sc.pos] == '\t') {
		sc.pos++
	}
}

// skipBlank skips spaces, line breaks and comments, as allowed between array elements.
func (sc *indexScanner) skipBlank() {
	for sc.pos < len(sc.s) {
		switch sc.s[sc.pos] {
		case '\n':
			sc.line++
			sc.pos++
		case ' ', '\t', '\r':
			sc.pos++
		case '#':
			sc.skipLine()
		default:
			return
		}
	}
}

// header reads [a.b] or [[a.b]] and makes it the current table. The path of each part that
// names an array of tables gets the index of its latest element, which is where TOML puts
// sub-tables such as [inputs.cpu.tags].
func (sc *indexScanner) header() {
	array := strings.HasPrefix(sc.s[sc.pos:], "[[")
	if array {
		sc.pos += 2
	} else {
		sc.pos++
	}
	keys := sc.keyPath()
	cur := ""
	for i, k := range keys {
		cur = joinPath(cur, k)
		sc.setIfAbsent(cur) // a parent table that only headers name, such as [processors]
		if array && i == len(keys)-1 {
			n := sc.idx.arrays[cur]
			sc.idx.arrays[cur] = n + 1
			cur = indexPath(cur, n)
		} else if n, ok := sc.idx.arrays[cur]; ok {
			cur = indexPath(cur, n-1)
		}
	}
	sc.setIfAbsent(cur)
	sc.table = cur
}

// keyValue reads key = value under the table at prefix.
func (sc *indexScanner) keyValue(prefix string) {
	keys := sc.keyPath()
	if len(keys) == 0 {
		sc.pos++ // not a key: step over the character so that scanning goes on
		return
	}
	sc.skipSpaces()
	if sc.peek() != '=' {
		return
	}
	sc.pos++
	path := prefix
	for i, k := range keys {
		path = joinPath(path, k)
		if i < len(keys)-1 {
			sc.setIfAbsent(path)
		}
	}
	sc.set(path)
	sc.skipValue(path)
}

// keyPath reads a dotted key of bare and quoted parts.
func (sc *indexScanner) keyPath() []string {
	var keys []string
	for {
		sc.skipSpaces()
		var k string
		switch sc.peek() {
		case '"':
			raw := sc.quoted('"')
			if u, err := strconv.Unquote(raw); err == nil {
				k = u
			} else {
				k = strings.Trim(raw, `"`)
			}
		case '\'':
			k = strings.Trim(sc.quoted('\''), "'")
		default:
			start := sc.pos
			for sc.pos < len(sc.s) && isBareKeyChar(sc.s[sc.pos]) {
				sc.pos++
			}
			if sc.pos == start {
				return keys
			}
			k = sc.s[start:sc.pos]
		}
		keys = append(keys, k)
		sc.skipSpaces()
		if sc.peek() != '.' {
			return keys
		}
		sc.pos++
	}
}

func isBareKeyChar(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// quoted reads a single-line string starting at its quote and returns it with its quotes.
func (sc *indexScanner) quoted(q byte) string {
	start := sc.pos
	sc.pos++
	for sc.pos < len(sc.s) && sc.s[sc.pos] != '\n' {
		c := sc.s[sc.pos]
		if c == '\\' && q == '"' && sc.pos+1 < len(sc.s) {
			sc.pos += 2
			continue
		}
		sc.pos++
		if c == q {
			break
		}
	}
	return sc.s[start:sc.pos]
}

// skipValue steps over one value, recording the keys of inline tables and the elements of
// arrays under path.
func (sc *indexScanner) skipValue(path string) {
	sc.skipSpaces()
	rest := sc.s[sc.pos:]
	switch {
	case strings.HasPrefix(rest, `"""`), strings.HasPrefix(rest, `'''`):
		sc.multiline(rest[0])
	case strings.HasPrefix(rest, `"`), strings.HasPrefix(rest, `'`):
		sc.quoted(rest[0])
	case strings.HasPrefix(rest, "["):
		sc.array(path)
	case strings.HasPrefix(rest, "{"):
		sc.inlineTable(path)
	default:
		start := sc.pos
		for sc.pos < len(sc.s) && !strings.ContainsRune(" \t\r\n,]}#", rune(sc.s[sc.pos])) {
			sc.pos++
		}
		if sc.pos == start && sc.pos < len(sc.s) && sc.s[sc.pos] != '\n' {
			sc.pos++
		}
	}
}

// multiline steps over a triple-quoted string of either kind, counting its lines.
func (sc *indexScanner) multiline(q byte) {
	delim := strings.Repeat(string(q), 3)
	sc.pos += 3
	for sc.pos < len(sc.s) {
		c := sc.s[sc.pos]
		switch {
		case c == '\\' && q == '"' && sc.pos+1 < len(sc.s):
			if sc.s[sc.pos+1] == '\n' {
				sc.line++
			}
			sc.pos += 2
		case strings.HasPrefix(sc.s[sc.pos:], delim):
			sc.pos += 3
			// Up to two more quotes belong to the string's content, before the delimiter.
			for n := 0; n < 2 && sc.peek() == q; n++ {
				sc.pos++
			}
			return
		default:
			if c == '\n' {
				sc.line++
			}
			sc.pos++
		}
	}
}

func (sc *indexScanner) array(path string) {
	sc.pos++
	for i := 0; sc.pos < len(sc.s); {
		sc.skipBlank()
		switch sc.peek() {
		case ']':
			sc.pos++
			return
		case ',':
			sc.pos++
		case 0:
			return
		default:
			elem := indexPath(path, i)
			sc.set(elem)
			sc.skipValue(elem)
			i++
		}
	}
}

func (sc *indexScanner) inlineTable(path string) {
	sc.pos++
	for sc.pos < len(sc.s) {
		sc.skipBlank()
		switch sc.peek() {
		case '}':
			sc.pos++
			return
		case ',':
			sc.pos++
		case 0:
			return
		default:
			sc.keyValue(path)
		}
	}
}
