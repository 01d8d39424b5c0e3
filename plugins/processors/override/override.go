// Package override is the override processor: it renames measurements and sets tags, with
// Telegraf's processors.override options and behaviour.
package override

import (
	_ "embed"
	"maps"
	"slices"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Apply metric modifications using override semantics"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "override",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Override{} },
	})
}

// Override sets the name and tags of every metric. Unlike an input's tags, which fill in
// only what a metric lacks, its tags replace existing ones.
type Override struct {
	NameOverride string            `toml:"name_override"`
	NamePrefix   string            `toml:"name_prefix"`
	NameSuffix   string            `toml:"name_suffix"`
	Tags         map[string]string `toml:"tags"`

	tags []morse.Tag // Tags, sorted by key
}

// Init sorts the tags once, so that Apply sets them in a stable order without sorting.
func (o *Override) Init() error {
	o.tags = o.tags[:0]
	for _, k := range slices.Sorted(maps.Keys(o.Tags)) {
		o.tags = append(o.tags, morse.Tag{Key: k, Value: o.Tags[k]})
	}
	return nil
}

// Apply changes the metrics of in in place.
func (o *Override) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		e := edit.Start(m)
		if o.NameOverride != "" {
			e.SetName(o.NameOverride)
		}
		if o.NamePrefix != "" || o.NameSuffix != "" {
			e.SetName(o.NamePrefix + e.Name() + o.NameSuffix)
		}
		for _, t := range o.tags {
			e.SetTag(t.Key, t.Value)
		}
		in[i] = e.Metric()
	}
	return in
}
