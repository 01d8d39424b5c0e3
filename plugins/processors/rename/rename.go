// Package rename is the rename processor: it renames measurements, tags and fields, with
// Telegraf's processors.rename options and behaviour.
package rename

import (
	_ "embed"
	"errors"
	"fmt"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Rename measurements, tags and fields that pass through this processor"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "rename",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Rename{} },
	})
}

// Rename applies its replacements in order to every metric.
type Rename struct {
	Replaces []Replace `toml:"replace"`
}

// Replace is one rename: exactly one of Measurement, Tag and Field names what is renamed,
// and Dest is the new name.
type Replace struct {
	Measurement string `toml:"measurement"`
	Tag         string `toml:"tag"`
	Field       string `toml:"field"`
	Dest        string `toml:"dest"`
}

// Validate refuses a replacement without a dest or without exactly one thing to rename.
// Telegraf skips such an entry silently; here it is an error so that a typo does not turn
// into a rename that never happens.
func (r *Rename) Validate() error {
	var errs []error
	for i, rp := range r.Replaces {
		key := fmt.Sprintf("replace[%d]", i)
		if rp.Dest == "" {
			errs = append(errs, morse.Errorf(key+".dest", "is required: the new name"))
		}
		n := 0
		for _, s := range []string{rp.Measurement, rp.Tag, rp.Field} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, morse.Errorf(key, "needs exactly one of measurement, tag and field, got %d", n))
		}
	}
	return errors.Join(errs...)
}

// Apply renames in place of in.
func (r *Rename) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		in[i] = r.apply(m)
	}
	return in
}

func (r *Rename) apply(m morse.Metric) morse.Metric {
	e := edit.Start(m)
	for _, rp := range r.Replaces {
		switch {
		case rp.Measurement != "":
			if e.Name() == rp.Measurement {
				e.SetName(rp.Dest)
			}
		case rp.Tag != "":
			e.RenameTag(rp.Tag, rp.Dest)
		case rp.Field != "":
			// Telegraf removes the field and adds it again under the new name, so the
			// renamed field goes last, or replaces a field that already has that name.
			if v, ok := e.Field(rp.Field); ok {
				e.RemoveField(rp.Field)
				e.SetField(rp.Dest, v)
			}
		}
	}
	return e.Metric()
}
