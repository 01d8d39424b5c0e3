// Package enum is the enum processor: it maps tag and field values through a table, with
// Telegraf's processors.enum options and behaviour.
package enum

import (
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Map enum values according to given table"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "enum",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Enum{} },
	})
}

// Enum applies its mappings to every metric.
type Enum struct {
	Mappings []Mapping `toml:"mapping"`
}

// Mapping maps the values of the selected fields and tags.
type Mapping struct {
	// Tag and Field are Telegraf's older single-key options, deprecated there in favour of
	// Tags and Fields; they are added to those.
	Tag           string         `toml:"tag"`
	Field         string         `toml:"field"`
	Tags          []string       `toml:"tags"`
	Fields        []string       `toml:"fields"`
	Dest          string         `toml:"dest"`
	Default       any            `toml:"default"`
	ValueMappings map[string]any `toml:"value_mappings"`

	fields, tags *glob.Matcher
	table        map[string]morse.Value
	def          morse.Value
	hasDefault   bool
}

// Validate compiles the globs and checks that every mapped value is one a field can hold.
func (e *Enum) Validate() error {
	var errs []error
	for i := range e.Mappings {
		errs = append(errs, e.Mappings[i].compile(fmt.Sprintf("mapping[%d]", i)))
	}
	return errors.Join(errs...)
}

func (mp *Mapping) compile(key string) error {
	var errs []error
	fields, tags := mp.Fields, mp.Tags
	if mp.Field != "" {
		fields = append(slices.Clip(fields), mp.Field)
	}
	if mp.Tag != "" {
		tags = append(slices.Clip(tags), mp.Tag)
	}
	if len(fields) == 0 && len(tags) == 0 {
		errs = append(errs, morse.Errorf(key, "maps nothing: set fields or tags"))
	}
	var err error
	mp.fields, err = glob.Compile(key+".fields", fields)
	errs = append(errs, err)
	mp.tags, err = glob.Compile(key+".tags", tags)
	errs = append(errs, err)
	mp.table = make(map[string]morse.Value, len(mp.ValueMappings))
	for _, k := range slices.Sorted(maps.Keys(mp.ValueMappings)) {
		x := mp.ValueMappings[k]
		v, ok := morse.ValueOf(x)
		if !ok {
			errs = append(errs, morse.Errorf(key+".value_mappings."+k, "must be a string, number or boolean, got %T", x))
		}
		mp.table[k] = v
	}
	if mp.Default != nil {
		mp.def, mp.hasDefault = morse.ValueOf(mp.Default)
		if !mp.hasDefault {
			errs = append(errs, morse.Errorf(key+".default", "must be a string, number or boolean, got %T", mp.Default))
		}
	}
	return errors.Join(errs...)
}

// Init compiles the mappings of a processor built in code without Validate.
func (e *Enum) Init() error {
	for _, mp := range e.Mappings {
		if mp.table == nil {
			return e.Validate()
		}
	}
	return nil
}

// lookup maps a value's text, falling back to the default.
func (mp *Mapping) lookup(text string) (morse.Value, bool) {
	if v, ok := mp.table[text]; ok {
		return v, true
	}
	return mp.def, mp.hasDefault
}

func (mp *Mapping) dest(key string) string {
	if mp.Dest != "" {
		return mp.Dest
	}
	return key
}

// text is how Telegraf looks a field value up: booleans and numbers by their text, floats
// without an exponent. (A value mapped into a tag is written with %v, which may have one.)
func text(v morse.Value) string {
	switch v.Type() {
	case morse.TypeString:
		return v.Str()
	case morse.TypeFloat:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

// result is a value to write once every mapping was looked at.
type result struct {
	key   string
	value morse.Value
}

// set records key's new value; a later mapping that writes the same key wins, in the
// place of the first.
func set(rs []result, key string, v morse.Value) []result {
	for i := range rs {
		if rs[i].key == key {
			rs[i].value = v
			return rs
		}
	}
	return append(rs, result{key, v})
}

// Apply maps the metrics of in in place. Every mapping reads the values the metric came
// with; the results are written after all mappings, fields first, as in Telegraf.
func (e *Enum) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		ed := edit.Start(m)
		var fields, tags []result
		for j := range e.Mappings {
			mp := &e.Mappings[j]
			for _, f := range ed.Fields() {
				if mp.fields.Match(f.Key) {
					if v, ok := mp.lookup(text(f.Value)); ok {
						fields = set(fields, mp.dest(f.Key), v)
					}
				}
			}
			for _, t := range ed.Tags() {
				if mp.tags.Match(t.Key) {
					if v, ok := mp.lookup(t.Value); ok {
						tags = set(tags, mp.dest(t.Key), morse.String(fmt.Sprint(v.Interface())))
					}
				}
			}
		}
		for _, r := range fields {
			ed.MoveField(r.key, r.value)
		}
		for _, r := range tags {
			ed.SetTag(r.key, r.value.Str())
		}
		in[i] = ed.Metric()
	}
	return in
}
