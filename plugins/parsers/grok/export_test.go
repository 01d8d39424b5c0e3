package grok

import "strings"

// Names returns the names that a patterns file defines, in order.
func Names(text string) []string {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" && line[0] != '#' {
			name, _, _ := strings.Cut(line, " ")
			names = append(names, name)
		}
	}
	return names
}

// patternsOnly compiles the patterns.
func (o *Options) patternsOnly() ([]*pattern, error) { return compile(o) }
