// Package defaults is the defaults processor: it gives metrics the fields and tags they lack
// or have blank, with Telegraf's processors.defaults options and behaviour.
package defaults

import (
	_ "embed"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Set default fields and tags on metrics where they are missing or blank"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "defaults",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Defaults{} },
	})
}

// Defaults sets its fields and tags where a metric does not have them, or has them blank.
type Defaults struct {
	Fields map[string]any    `toml:"fields"`
	Tags   map[string]string `toml:"tags"`

	fields []morse.Field // Fields, sorted by key, so that added fields come in a stable order
	tags   []morse.Tag
}

// Validate converts the default fields, refusing values that a field cannot hold.
func (d *Defaults) Validate() error {
	var errs []error
	d.fields = d.fields[:0]
	for _, k := range slices.Sorted(maps.Keys(d.Fields)) {
		v, ok := morse.ValueOf(d.Fields[k])
		if !ok {
			errs = append(errs, morse.Errorf("fields."+k, "must be a string, number or boolean, got %T", d.Fields[k]))
			continue
		}
		d.fields = append(d.fields, morse.Field{Key: k, Value: v})
	}
	d.tags = d.tags[:0]
	for _, k := range slices.Sorted(maps.Keys(d.Tags)) {
		d.tags = append(d.tags, morse.Tag{Key: k, Value: d.Tags[k]})
	}
	return errors.Join(errs...)
}

// Init converts the defaults of a processor built in code without Validate.
func (d *Defaults) Init() error {
	if d.fields == nil && d.tags == nil {
		return d.Validate()
	}
	return nil
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// Apply fills in the metrics of in in place.
func (d *Defaults) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		e := edit.Start(m)
		for _, f := range d.fields {
			cur, ok := e.Field(f.Key)
			if !ok || cur.Type() == morse.TypeString && blank(cur.Str()) {
				// Telegraf removes a blank field and adds the default, so it goes last.
				e.MoveField(f.Key, f.Value)
			}
		}
		for _, t := range d.tags {
			if cur, ok := e.Tag(t.Key); !ok || blank(cur) {
				e.SetTag(t.Key, t.Value)
			}
		}
		in[i] = e.Metric()
	}
	return in
}
