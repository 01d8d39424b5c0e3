// Package globpath matches file paths against the glob patterns of Telegraf's file and tail
// inputs: the usual *, ? and [...] within one path element, {a,b} alternatives, and **,
// which matches any number of directories ("/var/log/**.log" finds every .log file below
// /var/log).
package globpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Glob is a compiled pattern.
type Glob struct {
	pattern string
	root    string         // the longest directory prefix without metacharacters
	re      *regexp.Regexp // nil for a plain path
}

// Compile compiles a pattern. A pattern without metacharacters names one path.
func Compile(pattern string) (*Glob, error) {
	pattern = filepath.Clean(pattern)
	if !strings.ContainsAny(pattern, "*?[{") {
		return &Glob{pattern: pattern}, nil
	}
	re, err := toRegexp(pattern)
	if err != nil {
		return nil, err
	}
	return &Glob{pattern: pattern, root: root(pattern), re: re}, nil
}

// root is the directory part of the pattern before its first metacharacter.
func root(pattern string) string {
	i := strings.IndexAny(pattern, "*?[{")
	dir := filepath.Dir(pattern[:i+1])
	if dir == "" {
		return "."
	}
	return dir
}

// toRegexp translates the glob into an anchored regular expression.
func toRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				return nil, errors.New("unterminated character class in " + pattern)
			}
			class := pattern[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += end + 1
		case c == '{':
			depth++
			b.WriteString("(?:")
		case c == '}' && depth > 0:
			depth--
			b.WriteString(")")
		case c == ',' && depth > 0:
			b.WriteString("|")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, errors.New("unterminated {alternatives} in " + pattern)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// Match returns the regular files that match, in lexical order. A missing root directory
// matches nothing; it is not an error, since logs come and go.
func (g *Glob) Match() []string { return g.match(fs.FileMode.IsRegular) }

// MatchAny returns every path that matches and is not a directory (regular files, unix
// sockets, named pipes, devices), in lexical order: inputs.phpfpm globs FPM's sockets.
func (g *Glob) MatchAny() []string {
	return g.match(func(m fs.FileMode) bool { return !m.IsDir() })
}

// match returns the matching paths whose mode (links followed) keep accepts. A plain path
// is returned when it exists and is not a directory, whatever keep says: it was named.
func (g *Glob) match(keep func(fs.FileMode) bool) []string {
	if g.re == nil {
		if st, err := os.Stat(g.pattern); err == nil && !st.IsDir() {
			return []string{g.pattern}
		}
		return nil
	}
	var out []string
	_ = filepath.WalkDir(g.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// An unreadable directory is skipped; the rest of the tree is still searched.
			return nil
		}
		if d.IsDir() || !g.re.MatchString(path) {
			return nil
		}
		if st, err := os.Stat(path); err == nil && keep(st.Mode()) {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// String returns the pattern.
func (g *Glob) String() string { return g.pattern }
