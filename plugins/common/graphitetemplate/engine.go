// Package graphitetemplate holds Telegraf's Graphite templates, both ways: Engine reads a
// dotted metric path into a measurement, tags and a field with the parser's templates
// ("[separator] [filter] template [tag=value,...]", the most specific filter winning), and
// Namer writes a metric's path with the serializer's ("[glob] template", where the template
// names the measurement, the field, the tags and single tags). The graphite parser and
// serializer, and later the graphite and statsd inputs, share them.
//
// The two template languages are Telegraf's and differ as its do: the parser's parts say
// what each piece of a path is (measurement, measurement*, field, field*, a tag key or
// nothing); the serializer's say what to write in each place (measurement, field, tags, or
// the value of a tag).
package graphitetemplate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
)

// DefaultSeparator separates the parts of templates, filters and paths.
const DefaultSeparator = "."

// spec is one parser template as written: "[separator] [filter] template [tags]".
type spec struct {
	pos                            int
	separator, filter, tmpl, tagSp string
}

// parseSpec splits a template as Telegraf's engine does: one word is a template; two are
// a filter and a template, or a template and tags when the second holds '='; three are a
// filter, a template and tags, or a separator, a filter and a template; four are all.
func parseSpec(pos int, s string) (spec, error) {
	parts := strings.Fields(s)
	sp := spec{pos: pos, separator: DefaultSeparator}
	switch n := len(parts); {
	case n == 0:
		return sp, fmt.Errorf("missing template at position: %d", pos)
	case n == 1:
		sp.tmpl = parts[0]
	case n == 4:
		sp.separator, sp.filter, sp.tmpl, sp.tagSp = parts[0], parts[1], parts[2], parts[3]
	case n > 4:
		return sp, fmt.Errorf("invalid template format: %q", s)
	case strings.Contains(parts[n-1], "="):
		sp.tagSp, sp.tmpl = parts[n-1], parts[n-2]
		if n == 3 {
			sp.filter = parts[0]
		}
	default:
		sp.tmpl = parts[n-1]
		if n == 2 {
			sp.filter = parts[0]
		} else {
			sp.separator, sp.filter = parts[0], parts[1]
		}
	}
	return sp, nil
}

// Template is one parser template: what each part of a path is, and the tags it adds.
type Template struct {
	separator   string
	parts       []string
	defaultTags []morse.Tag
}

// NewTemplate builds a template of pattern with the parts separated by separator. It
// needs a measurement part, and cannot have both measurement* and field*.
func NewTemplate(separator, pattern string, defaultTags []morse.Tag) (*Template, error) {
	t := &Template{separator: separator, parts: strings.Split(pattern, separator), defaultTags: defaultTags}
	hasMeasurement, greedyM, greedyF := false, false, false
	for _, p := range t.parts {
		hasMeasurement = hasMeasurement || strings.HasPrefix(p, "measurement")
		greedyM = greedyM || p == "measurement*"
		greedyF = greedyF || p == "field*"
	}
	if !hasMeasurement {
		return nil, fmt.Errorf("no measurement specified for template. %q", pattern)
	}
	if greedyM && greedyF {
		return nil, fmt.Errorf("either 'field*' or 'measurement*' can be used in each template (but not both together): %q", pattern)
	}
	return t, nil
}

// Apply reads path with t: the measurement and field parts joined with joiner, and the
// tags (t's own first, then the path's, a key given twice joined with joiner). Parts of
// the path beyond the template are ignored unless the template ends with a greedy part.
func (t *Template) Apply(path, joiner string) (measurement string, tags []morse.Tag, field string) {
	all := strings.Split(path, t.separator)
	var ms, fs []string
	tags = append(tags, t.defaultTags...)
	for i, p := range t.parts {
		if i >= len(all) || p == "" {
			continue
		}
		switch p {
		case "measurement":
			ms = append(ms, all[i])
		case "measurement*":
			ms = append(ms, all[i:]...)
		case "field":
			fs = append(fs, all[i])
		case "field*":
			fs = append(fs, all[i:]...)
		default:
			tags = addTag(tags, p, all[i], joiner)
		}
	}
	return strings.Join(ms, joiner), tags, strings.Join(fs, joiner)
}

// addTag adds key=value, or appends value to the key's value with joiner.
func addTag(tags []morse.Tag, key, value, joiner string) []morse.Tag {
	for i := range tags {
		if tags[i].Key == key {
			tags[i].Value += joiner + value
			return tags
		}
	}
	return append(tags, morse.Tag{Key: key, Value: value})
}

// setTag sets key to value: a key given twice keeps its last value, as a map does.
func setTag(tags []morse.Tag, key, value string) []morse.Tag {
	for i := range tags {
		if tags[i].Key == key {
			tags[i].Value = value
			return tags
		}
	}
	return append(tags, morse.Tag{Key: key, Value: value})
}

// Engine picks the template for a path and applies it.
type Engine struct {
	joiner string
	root   node
	def    *Template
}

// NewEngine builds the engine of the parser's templates: joiner joins measurement and
// field parts, def is used for paths no filter matches and templates without a filter
// replace it (the one with the most parts last). It reports every bad template.
func NewEngine(joiner string, def *Template, templates []string) (*Engine, error) {
	e := &Engine{joiner: joiner, def: def}
	var specs []spec
	var errs []error
	for i, s := range templates {
		if strings.TrimSpace(s) == "" {
			continue // Telegraf's engine skips an empty template
		}
		sp, err := parseSpec(i, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		specs = append(specs, sp)
	}
	// Templates without a filter first, then fewer parts before more, so that of two with
	// the same filter the later, more specific one is kept.
	slices.SortStableFunc(specs, func(a, b spec) int {
		if (a.filter == "") != (b.filter == "") {
			if a.filter == "" {
				return -1
			}
			return 1
		}
		return cmp.Compare(strings.Count(a.tmpl, a.separator), strings.Count(b.tmpl, b.separator))
	})
	for _, sp := range specs {
		if err := e.add(sp); err != nil {
			errs = append(errs, fmt.Errorf("template %d: %w", sp.pos+1, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return e, nil
}

func (e *Engine) add(sp spec) error {
	var tags []morse.Tag
	if sp.tagSp != "" {
		for _, kv := range strings.Split(sp.tagSp, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" || strings.Contains(v, "=") {
				return fmt.Errorf("invalid template tags: %q", kv)
			}
			tags = setTag(tags, k, v)
		}
	}
	t, err := NewTemplate(sp.separator, sp.tmpl, tags)
	if err != nil {
		return err
	}
	// As in Telegraf, the path is split with the separator of the template added last.
	e.root.separator = t.separator
	if sp.filter == "" {
		e.def = t
		return nil
	}
	e.root.insert(strings.Split(sp.filter, t.separator), t)
	return nil
}

// Apply reads path with the template that matches it best.
func (e *Engine) Apply(path string) (measurement string, tags []morse.Tag, field string) {
	t := e.Match(path)
	return t.Apply(path, e.joiner)
}

// Match returns the template for path: the one whose filter matches most of it, an exact
// part before a wildcard, or the default.
func (e *Engine) Match(path string) *Template {
	if t := e.root.search(strings.Split(path, e.root.separator)); t != nil {
		return t
	}
	return e.def
}
