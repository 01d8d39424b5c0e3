package graphitetemplate

import (
	"errors"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/filter"
)

// DefaultNameTemplate is the serializer's template when none is given: the host tag, the
// other tags' values, the measurement and the field.
const DefaultNameTemplate = "host.tags.measurement.field"

// fieldMark stands for the field in a path until the field is known, as in Telegraf,
// whose users' templates and outputs rely on what follows from it: a field named "value"
// is left out with the separator beside the mark.
const fieldMark = "FIELDNAME"

// Namer writes metric paths with the serializer's templates: "template" is the default,
// and "templates" entries are "glob template" (for measurements the glob matches, the first
// match winning) or a lone template that replaces the default.
type Namer struct {
	def     []string
	globbed []globTemplate
	prefix  string
}

type globTemplate struct {
	f     *filter.Filter
	parts []string
}

// NewNamer builds a Namer. It reports every bad entry of templates, each with its key.
func NewNamer(template string, templates []string, prefix string) (*Namer, error) {
	if template == "" {
		template = DefaultNameTemplate
	}
	n := &Namer{prefix: prefix}
	var errs []error
	for i, t := range templates {
		parts := strings.Fields(t)
		switch len(parts) {
		case 0:
			errs = append(errs, morse.Errorf("templates", "missing template at position: %d", i))
		case 1:
			template = parts[0]
		case 2:
			f, err := filter.New(filter.Config{NamePass: []string{parts[0]}})
			if err != nil {
				errs = append(errs, morse.Errorf("templates", "template %d: %w", i+1, err))
				continue
			}
			n.globbed = append(n.globbed, globTemplate{f: f, parts: strings.Split(parts[1], ".")})
		default:
			errs = append(errs, morse.Errorf("templates", "invalid template format: %q", t))
		}
	}
	n.def = strings.Split(template, ".")
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return n, nil
}

// template returns the parts of the template for m.
func (n *Namer) template(m morse.Metric) []string {
	for _, g := range n.globbed {
		if g.f.Selects(m) {
			return g.parts
		}
	}
	return n.def
}

// Bucket is m's path with the mark where the field goes, unsanitized, or "" when the
// template yields nothing. The measurement part is the measurement; "tags" is the values
// of the tags no other part names, in key order, joined with dots; "field" is the field;
// any other part is the value of that tag, left out when m has no such tag. Dots in tag
// values become underscores. Only the first "tags" part is filled.
func (n *Namer) Bucket(m morse.Metric) string {
	parts := n.template(m)
	tags := m.Tags()
	used := make([]bool, len(tags))
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		switch p {
		case "measurement":
			out = append(out, m.Name())
		case "tags":
			out = append(out, "\x00tags")
		case "field":
			out = append(out, fieldMark)
		default:
			if i := slices.IndexFunc(tags, func(t morse.Tag) bool { return t.Key == p }); i >= 0 && !used[i] {
				out = append(out, dotless(tags[i].Value))
				used[i] = true
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	if i := slices.Index(out, "\x00tags"); i >= 0 {
		var b strings.Builder
		for j, t := range tags {
			if used[j] {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(dotless(t.Value))
		}
		out[i] = b.String()
	}
	for i := range out {
		if out[i] == "\x00tags" {
			out[i] = "TAGS" // a second "tags" part is written as Telegraf writes it
		}
	}
	path := strings.Join(out, ".")
	if n.prefix != "" {
		path = n.prefix + "." + path
	}
	return path
}

func dotless(s string) string { return strings.ReplaceAll(s, ".", "_") }

// AppendField appends bucket with field in place of the first mark. A field named
// "value" is not written: every mark is removed with the dot after it, or before it.
func AppendField(dst []byte, bucket, field string) []byte {
	if field != "value" {
		if i := strings.Index(bucket, fieldMark); i >= 0 {
			return append(append(append(dst, bucket[:i]...), field...), bucket[i+len(fieldMark):]...)
		}
		return append(dst, bucket...)
	}
	for i := 0; i < len(bucket); {
		switch {
		case strings.HasPrefix(bucket[i:], "."+fieldMark), strings.HasPrefix(bucket[i:], fieldMark+"."):
			i += len(fieldMark) + 1
		default:
			dst = append(dst, bucket[i])
			i++
		}
	}
	return dst
}
