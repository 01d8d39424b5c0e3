// Package regex is the regex processor: it rewrites tag and field values, and tag, field and
// measurement names, with regular expressions, with Telegraf's processors.regex options and
// behaviour.
package regex

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Transform tag and field values, and tag, field and measurement names, with regular expressions"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "regex",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Regex{} },
	})
}

// Regex applies its sections in Telegraf's order: every Tags entry, every Fields entry, then
// TagRename, FieldRename and MetricRename.
type Regex struct {
	Tags         []Rule `toml:"tags"`
	Fields       []Rule `toml:"fields"`
	TagRename    []Rule `toml:"tag_rename"`
	FieldRename  []Rule `toml:"field_rename"`
	MetricRename []Rule `toml:"metric_rename"`

	log      *slog.Logger
	compiled bool
}

// Rule is one entry of a section.
type Rule struct {
	Key         string `toml:"key"`
	Pattern     string `toml:"pattern"`
	Replacement string `toml:"replacement"`
	ResultKey   string `toml:"result_key"`
	Append      bool   `toml:"append"`

	re     *regexp.Regexp
	match  *glob.Matcher
	groups []string // named-group mode: the names of the pattern's groups
}

// Result keys of the rename sections.
const (
	keep      = "keep"
	overwrite = "overwrite"
)

// SetLogger gives the processor the engine's logger.
func (r *Regex) SetLogger(l *slog.Logger) { r.log = l }

// Validate compiles every rule. Options that Telegraf ignores in a section with a log line
// are refused here, so that a config means what it says.
func (r *Regex) Validate() error {
	r.compiled = true
	var errs []error
	for _, s := range r.sections() {
		for i := range *s.rules {
			key := fmt.Sprintf("%s[%d]", s.name, i)
			errs = append(errs, (*s.rules)[i].compile(key, s.name))
		}
	}
	return errors.Join(errs...)
}

type section struct {
	name  string
	rules *[]Rule
}

func (r *Regex) sections() []section {
	return []section{{"tags", &r.Tags}, {"fields", &r.Fields}, {"tag_rename", &r.TagRename},
		{"field_rename", &r.FieldRename}, {"metric_rename", &r.MetricRename}}
}

func (c *Rule) compile(key, section string) error {
	var errs []error
	re, err := regexp.Compile(c.Pattern)
	if err != nil {
		errs = append(errs, morse.Errorf(key+".pattern", "%v", err))
	}
	c.re = re
	if c.Append && section != "tags" {
		errs = append(errs, morse.Errorf(key+".append", "applies to tags only"))
	}
	switch section {
	case "tags", "fields":
		if c.Key == "" {
			errs = append(errs, morse.Errorf(key+".key", "is required: the %s to process (globs allowed)", section))
		}
		m, err := glob.Compile(key+".key", []string{c.Key})
		errs = append(errs, err)
		c.match = m
		if re != nil && c.ResultKey == "" && c.Replacement == "" {
			c.groups = namedGroups(re)
		}
	case "tag_rename", "field_rename":
		if c.Key != "" {
			errs = append(errs, morse.Errorf(key+".key", "has no effect: renames select by pattern"))
		}
		switch c.ResultKey {
		case "":
			c.ResultKey = keep
		case keep, overwrite:
		default:
			errs = append(errs, morse.Errorf(key+".result_key", "must be %q or %q, got %q", keep, overwrite, c.ResultKey))
		}
	case "metric_rename":
		if c.Key != "" || c.ResultKey != "" {
			errs = append(errs, morse.Errorf(key, "key and result_key have no effect on metric_rename"))
		}
	}
	return errors.Join(errs...)
}

// namedGroups returns the names of the pattern's groups when every group has one, which
// selects the named-group mode; nil otherwise.
func namedGroups(re *regexp.Regexp) []string {
	names := re.SubexpNames()[1:]
	if len(names) == 0 {
		return nil
	}
	for _, n := range names {
		if n == "" {
			return nil
		}
	}
	return names
}

// Init warns about a rule that has neither a replacement nor a result_key but is not in the
// named-group mode: it replaces matching values with an empty string, as in Telegraf, which
// is seldom what was meant.
func (r *Regex) Init() error {
	if r.log == nil {
		r.log = slog.Default()
	}
	if !r.compiled {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	for _, s := range r.sections()[:2] {
		for i, c := range *s.rules {
			if c.re != nil && c.Replacement == "" && c.ResultKey == "" && c.groups == nil {
				r.log.Warn("regex: neither replacement nor result_key, and not every group is named: matching values become empty",
					"section", fmt.Sprintf("%s[%d]", s.name, i))
			}
		}
	}
	return nil
}

// Apply rewrites the metrics of in in place.
func (r *Regex) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		e := edit.Start(m)
		for j := range r.Tags {
			r.Tags[j].applyTags(&e)
		}
		for j := range r.Fields {
			r.Fields[j].applyFields(&e)
		}
		for j := range r.TagRename {
			r.TagRename[j].applyTagRename(&e)
		}
		for j := range r.FieldRename {
			r.FieldRename[j].applyFieldRename(&e)
		}
		for j := range r.MetricRename {
			c := &r.MetricRename[j]
			if name := e.Name(); c.re.MatchString(name) {
				e.SetName(c.re.ReplaceAllString(name, c.Replacement))
			}
		}
		in[i] = e.Metric()
	}
	return in
}
