package grok

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
)

// The built-in patterns, in the format of a grok_custom_pattern_files file.
var (
	//go:embed patterns/base
	basePatterns string
	//go:embed patterns/telegraf
	telegrafPatterns string
)

// definition is one named pattern and the option it came from, for error messages.
type definition struct {
	raw  string // as written
	text string // custom patterns: raw with inherited modifiers, all modifiers taken out
	key  string // the option that defined it ("grok_custom_patterns", ...), "" for built-ins
	// label names it in errors: "pattern NAME", or a grok_patterns entry's text.
	label string
	// custom marks Telegraf's and the user's patterns: a reference to one without a capture
	// name is replaced by its text, so that its modifiers apply to the pattern that names it.
	// The base set is only named, as Telegraf's grok library names it.
	custom bool
}

// library is every pattern definition by name, a later definition replacing an earlier one
// as in Telegraf: the base set, Telegraf's, grok_custom_patterns, grok_patterns (under
// internal names) and then the grok_custom_pattern_files.
type library struct {
	defs map[string]*definition
	// mods holds the modifiers of each custom pattern, its inherited ones included, by
	// capture name; filled by prepare.
	mods map[string]modifiers
	// expanded memoizes each pattern's regular expression; expanding marks those being
	// expanded, to catch a pattern that names itself.
	expanded  map[string]string
	expanding map[string]bool
	// aliases maps a capture group's name back to its capture name where the capture name
	// has characters Go's regexp does not take in group names ('-' and '.').
	aliases map[string]string
	// failed holds the patterns already reported as broken; naming one fails with
	// errReported, which is not reported again.
	failed map[string]bool
}

// errReported is the error of a pattern that names a broken one, whose problem was
// reported on its own.
var errReported = errors.New("names a broken pattern")

func newLibrary() *library {
	l := &library{defs: map[string]*definition{}, mods: map[string]modifiers{},
		expanded: map[string]string{}, expanding: map[string]bool{}, aliases: map[string]string{}, failed: map[string]bool{}}
	// The built-in files are well formed; a problem in them fails the package's tests.
	_ = l.addText(basePatterns, "", false)
	_ = l.addText(telegrafPatterns, "", true)
	return l
}

// addText reads definitions, one a line: NAME, one space, the pattern. Blank lines and lines
// starting with '#' are skipped; each line is trimmed first.
func (l *library) addText(text, key string, custom bool) error {
	var errs []error
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, pattern, ok := strings.Cut(line, " ")
		if !ok {
			// Telegraf's loader fails on such a line (an index out of range).
			errs = append(errs, morse.Errorf(key, "pattern %s has no definition: a line is NAME, a space, and the pattern", name))
			continue
		}
		l.defs[name] = &definition{raw: pattern, text: pattern, key: key, custom: custom, label: "pattern " + name}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, morse.Errorf(key, "%w", err))
	}
	return errors.Join(errs...)
}

// addFile reads a grok_custom_pattern_files file.
func (l *library) addFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return morse.Errorf("grok_custom_pattern_files", "%w", err)
	}
	if err := l.addText(string(data), "grok_custom_pattern_files", true); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

var (
	// plainRef is a reference without a capture name, %{NAME}, the only kind through which
	// a custom pattern's modifiers are inherited.
	plainRef = regexp.MustCompile(`%{(\w+)}`)
	// anyRef is every reference that the grok library expands: %{NAME}, %{NAME:capture}
	// and %{NAME:capture:type}.
	anyRef = regexp.MustCompile(`%{([\w\-.]+(?::[\w\-.]+(?::[\w\-.]+)?)?)}`)
	// validRef is the form of a reference the grok library accepts: after stripping
	// Telegraf's modifiers, only its own types may remain as a third part, and it ignores
	// them.
	validRef = regexp.MustCompile(`^\w+([-.]\w+)*(:([-.\w]+)(:(string|float|int))?)?$`)
	// nonWord is replaced by '_' in a capture name to make a group name of it.
	nonWord = regexp.MustCompile(`\W`)
)

// inline returns the text of custom pattern name with every %{NAME} of a custom pattern
// replaced by that pattern's text, at any depth, so that its modifiers are found in it.
// Telegraf does this in two passes over a map, which reaches at least two levels and more
// depending on the map's order; morse goes all the way down, the same every run.
func (l *library) inline(name string, seen map[string]bool) (string, error) {
	if seen[name] {
		return "", fmt.Errorf("pattern %s refers to itself", name)
	}
	seen[name] = true
	defer delete(seen, name)
	text := l.defs[name].raw
	var err error
	out := plainRef.ReplaceAllStringFunc(text, func(ref string) string {
		sub := ref[2 : len(ref)-1]
		def, ok := l.defs[sub]
		if !ok || !def.custom || err != nil {
			return ref
		}
		var s string
		s, err = l.inline(sub, seen)
		return s
	})
	return out, err
}

// prepare inlines and takes the modifiers out of every custom pattern, and checks that every
// pattern names only patterns that exist, reporting each problem, as Telegraf's Init fails
// on any pattern it was given, used or not.
func (l *library) prepare() error {
	var errs []error
	names := slices.Sorted(maps.Keys(l.defs))
	for _, name := range names {
		def := l.defs[name]
		if !def.custom {
			continue
		}
		text, err := l.inline(name, map[string]bool{})
		if err == nil {
			var mods modifiers
			text, mods, err = takeModifiers(text)
			l.mods[name] = mods
		}
		if err != nil {
			errs = append(errs, morse.Errorf(def.key, "%s: %w", def.label, err))
			l.failed[name] = true
			continue
		}
		def.text = text
	}
	for _, name := range names {
		def := l.defs[name]
		if l.failed[name] {
			continue
		}
		if _, err := l.expand(name); err != nil && def.key != "" && !errors.Is(err, errReported) {
			errs = append(errs, morse.Errorf(def.key, "%s: %w", def.label, err))
		}
	}
	return errors.Join(errs...)
}

// expand returns the regular expression of pattern name: every reference replaced by the
// expression of the pattern it names, in a group named after the capture name where it
// has one, as Telegraf's grok library does (which uses capturing groups for references
// without a name; morse's are non-capturing, which matches the same text, faster).
func (l *library) expand(name string) (string, error) {
	if re, ok := l.expanded[name]; ok {
		return re, nil
	}
	if l.failed[name] {
		return "", errReported
	}
	if l.expanding[name] {
		return "", fmt.Errorf("pattern %s refers to itself", name)
	}
	def, ok := l.defs[name]
	if !ok {
		return "", fmt.Errorf("no pattern found for %%{%s}", name)
	}
	l.expanding[name] = true
	defer delete(l.expanding, name)
	re, err := l.expandText(def.text)
	if err != nil {
		l.failed[name] = true
		return "", err
	}
	l.expanded[name] = re
	return re, nil
}

// expandText replaces each reference in text by its pattern's expression.
func (l *library) expandText(text string) (string, error) {
	var b strings.Builder
	last := 0
	for _, loc := range anyRef.FindAllStringSubmatchIndex(text, -1) {
		ref := text[loc[2]:loc[3]]
		if !validRef.MatchString(ref) {
			return "", fmt.Errorf("invalid pattern %%{%s}", ref)
		}
		parts := strings.Split(ref, ":")
		sub, err := l.expand(parts[0])
		if err != nil {
			return "", err
		}
		b.WriteString(text[last:loc[0]])
		if len(parts) > 1 {
			alias := nonWord.ReplaceAllString(parts[1], "_")
			l.aliases[alias] = parts[1]
			b.WriteString("(?P<" + alias + ">" + sub + ")")
		} else {
			b.WriteString("(?:" + sub + ")")
		}
		last = loc[1]
	}
	if last == 0 {
		return text, nil
	}
	b.WriteString(text[last:])
	return b.String(), nil
}
