// Package tag_limit is the tag_limit processor: it caps the number of tags of a metric,
// keeping the preferred ones, with Telegraf's processors.tag_limit options and behaviour.
package tag_limit

import (
	_ "embed"
	"slices"

	"github.com/morse-agent/morse"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Restrict the number of tags that pass through and choose which to keep when over the limit"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "tag_limit",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &TagLimit{} },
	})
}

// TagLimit removes tags beyond Limit, sparing those in Keep.
type TagLimit struct {
	Limit int      `toml:"limit"`
	Keep  []string `toml:"keep"`
}

// Validate refuses a negative limit and more preferred tags than the limit allows. Telegraf
// accepts such a config and then logs an error for every batch, passing metrics unchanged.
func (p *TagLimit) Validate() error {
	if p.Limit < 0 {
		return morse.Errorf("limit", "must not be negative")
	}
	if len(p.Keep) > p.Limit {
		return morse.Errorf("keep", "lists %d tags, more than the limit of %d", len(p.Keep), p.Limit)
	}
	return nil
}

// Apply trims the metrics of in in place. The tags to remove are the first ones, in key
// order, that Keep does not list, until the metric is at the limit.
func (p *TagLimit) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		m = m.Expanded()
		tags := m.Tags()
		over := len(tags) - p.Limit
		if over <= 0 {
			in[i] = m
			continue
		}
		kept := make([]morse.Tag, 0, p.Limit)
		for _, t := range tags {
			if over > 0 && !slices.Contains(p.Keep, t.Key) {
				over--
				continue
			}
			kept = append(kept, t)
		}
		in[i] = m.WithSortedTags(kept)
	}
	return in
}
