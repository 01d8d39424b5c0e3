// Package strings is the strings processor: it changes the case of, trims, replaces and
// decodes tag and field values, tag and field keys and measurement names, with Telegraf's
// processors.strings options and behaviour.
package strings

import (
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Perform string processing on tags, fields and measurements"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "strings",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Strings{} },
	})
}

// Strings runs its operations in a fixed order (that of the fields below), as Telegraf
// does: TOML cannot say in which order entries of different tables were written.
type Strings struct {
	Lowercase    []Op `toml:"lowercase"`
	Uppercase    []Op `toml:"uppercase"`
	Titlecase    []Op `toml:"titlecase"`
	Trim         []Op `toml:"trim"`
	TrimLeft     []Op `toml:"trim_left"`
	TrimRight    []Op `toml:"trim_right"`
	TrimPrefix   []Op `toml:"trim_prefix"`
	TrimSuffix   []Op `toml:"trim_suffix"`
	Replace      []Op `toml:"replace"`
	Left         []Op `toml:"left"`
	Base64Decode []Op `toml:"base64decode"`
	ValidUTF8    []Op `toml:"valid_utf8"`

	ops []*Op
}

// Op is one operation: what it works on, and the operation's own options.
type Op struct {
	Field       string `toml:"field"`
	FieldKey    string `toml:"field_key"`
	Tag         string `toml:"tag"`
	TagKey      string `toml:"tag_key"`
	Measurement string `toml:"measurement"`
	Dest        string `toml:"dest"`

	Cutset      string `toml:"cutset"`
	Suffix      string `toml:"suffix"`
	Prefix      string `toml:"prefix"`
	Old         string `toml:"old"`
	New         string `toml:"new"`
	Width       int    `toml:"width"`
	Replacement string `toml:"replacement"`

	fn func(string) string
}

// Validate builds the operations and refuses entries that would do nothing.
func (s *Strings) Validate() error {
	var errs []error
	s.ops = s.ops[:0]
	for _, table := range []struct {
		name string
		ops  []Op
		fn   func(*Op) func(string) string
	}{
		{"lowercase", s.Lowercase, func(*Op) func(string) string { return strings.ToLower }},
		{"uppercase", s.Uppercase, func(*Op) func(string) string { return strings.ToUpper }},
		{"titlecase", s.Titlecase, func(*Op) func(string) string { return titlecase }},
		{"trim", s.Trim, func(o *Op) func(string) string { return trimmer(o.Cutset, strings.Trim, strings.TrimFunc) }},
		{"trim_left", s.TrimLeft, func(o *Op) func(string) string {
			return trimmer(o.Cutset, strings.TrimLeft, strings.TrimLeftFunc)
		}},
		{"trim_right", s.TrimRight, func(o *Op) func(string) string {
			return trimmer(o.Cutset, strings.TrimRight, strings.TrimRightFunc)
		}},
		{"trim_prefix", s.TrimPrefix, func(o *Op) func(string) string {
			return func(v string) string { return strings.TrimPrefix(v, o.Prefix) }
		}},
		{"trim_suffix", s.TrimSuffix, func(o *Op) func(string) string {
			return func(v string) string { return strings.TrimSuffix(v, o.Suffix) }
		}},
		{"replace", s.Replace, func(o *Op) func(string) string { return o.replace }},
		{"left", s.Left, func(o *Op) func(string) string { return o.left }},
		{"base64decode", s.Base64Decode, func(*Op) func(string) string { return base64Decode }},
		{"valid_utf8", s.ValidUTF8, func(o *Op) func(string) string {
			return func(v string) string { return strings.ToValidUTF8(v, o.Replacement) }
		}},
	} {
		for i := range table.ops {
			o := &table.ops[i]
			if o.Field == "" && o.FieldKey == "" && o.Tag == "" && o.TagKey == "" && o.Measurement == "" {
				errs = append(errs, morse.Errorf(fmt.Sprintf("%s[%d]", table.name, i),
					"names nothing to work on: set field, field_key, tag, tag_key or measurement"))
			}
			if table.name == "left" && o.Width < 0 {
				errs = append(errs, morse.Errorf(fmt.Sprintf("left[%d].width", i), "must not be negative"))
			}
			o.fn = table.fn(o)
			s.ops = append(s.ops, o)
		}
	}
	return errors.Join(errs...)
}

// Init builds the operations of a processor made in code without Validate.
func (s *Strings) Init() error {
	if s.ops == nil {
		return s.Validate()
	}
	return nil
}

// titlecase upper-cases the first letter of every word and leaves the rest alone. A Caser
// keeps state, so each call gets its own.
func titlecase(s string) string { return cases.Title(language.Und, cases.NoLower).String(s) }

// trimmer trims cutset with cut, or white space with byFunc when cutset is empty.
func trimmer(cutset string, cut func(string, string) string, byFunc func(string, func(rune) bool) string) func(string) string {
	if cutset != "" {
		return func(s string) string { return cut(s, cutset) }
	}
	return func(s string) string { return byFunc(s, unicode.IsSpace) }
}

// replace refuses to leave an empty string, which would delete a name.
func (o *Op) replace(s string) string {
	if r := strings.ReplaceAll(s, o.Old, o.New); r != "" {
		return r
	}
	return s
}

// left keeps the first Width bytes, as Telegraf does: a multi-byte character may be cut.
func (o *Op) left(s string) string {
	if len(s) < o.Width {
		return s
	}
	return s[:o.Width]
}

// base64Decode decodes s when it is base64 of valid UTF-8, and leaves it alone otherwise.
func base64Decode(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !utf8.Valid(b) {
		return s
	}
	return string(b)
}

// Apply processes the metrics of in in place.
func (s *Strings) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		e := edit.Start(m)
		for _, o := range s.ops {
			o.apply(&e)
		}
		in[i] = e.Metric()
	}
	return in
}
