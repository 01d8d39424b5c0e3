package config

import (
	"errors"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/docs"
)

// Status is what morse does with one plugin or option of a Telegraf config.
type Status string

// The statuses of `morse config check`.
const (
	// StatusSame: the option exists and means what it means in Telegraf.
	StatusSame Status = "same"
	// StatusWarned: accepted with a warning at start (deprecated, mapped, or without effect).
	StatusWarned Status = "warned"
	// StatusDiffers: accepted with a difference that the compatibility page states.
	StatusDiffers Status = "differs"
	// StatusUnsupported: an unknown plugin or option, which stops the config from loading.
	StatusUnsupported Status = "unsupported"
)

// Finding is what morse does with one option of one plugin, or with the plugin itself
// when Key is empty.
type Finding struct {
	File   string
	Line   int
	Plugin string // "inputs.cpu"
	Key    string // "" for the plugin as a whole
	Status Status
	Note   string // why, or what to write instead
	Doc    string // a link to the compatibility page's section, for StatusDiffers and StatusWarned
}

// Report is the result of Check.
type Report struct {
	Findings []Finding // per plugin in file order, and per option of each in key order
	Warnings []Warning // warnings outside the plugins' options: environment, [agent]
	Problems Errors    // what stops the config from loading; empty when it would run
}

// Check reads a Telegraf config as Load does and says, for each plugin and option, what
// morse does with it. It knows this from the registry (which plugins exist), the plugins'
// own fields (which keys they take), Deprecations, and the tables of the compatibility
// page (docs.CompatRows), and its Problems are those Load reports.
func Check(opts Options) *Report {
	reg := opts.Registry
	if reg == nil {
		reg = morse.DefaultRegistry()
	}
	rep := &Report{}
	f, _ := Read(opts)
	if f == nil {
		return rep
	}
	rep.Warnings = f.Warnings
	rows := compatRows()
	for _, p := range orderedPlugins(f) {
		rep.Findings = append(rep.Findings, checkPlugin(reg, p, rows)...)
	}
	if _, err := Load(opts); err != nil {
		var errs Errors
		if !errors.As(err, &errs) {
			errs = Errors{{Msg: err.Error()}}
		}
		rep.Problems = errs
	}
	return rep
}

// orderedPlugins lists every plugin table in file order.
func orderedPlugins(f *File) []*Plugin {
	var all []*Plugin
	for _, ps := range [][]*Plugin{f.Inputs, f.Outputs, f.Processors, f.Aggregators} {
		all = append(all, ps...)
	}
	return all
}

// newFromRegistry makes a fresh instance of the plugin, or false when morse has none.
func newFromRegistry(reg *morse.Registry, kind, name string) (any, bool) {
	switch kind {
	case KindInputs:
		if i, ok := reg.Input(name); ok {
			return i.New(), true
		}
	case KindOutputs:
		if i, ok := reg.Output(name); ok {
			return i.New(), true
		}
	case KindProcessors:
		if i, ok := reg.Processor(name); ok {
			return i.New(), true
		}
	case KindAggregators:
		if i, ok := reg.Aggregator(name); ok {
			return i.New(), true
		}
	}
	return nil, false
}

func checkPlugin(reg *morse.Registry, p *Plugin, rows map[string]docs.Row) []Finding {
	plugin, ok := newFromRegistry(reg, p.Kind, p.Name)
	if !ok {
		return []Finding{{File: p.File, Line: p.Line, Plugin: p.ID(), Status: StatusUnsupported,
			Note: "morse has no " + p.ID() + " plugin"}}
	}
	accepts, _ := pluginKeys(plugin)
	out := []Finding{{File: p.File, Line: p.Line, Plugin: p.ID(), Status: StatusSame}}
	for _, key := range sortedKeys(p.table) {
		fd := Finding{File: p.File, Line: p.KeyLine(key), Plugin: p.ID(), Key: key, Status: StatusSame}
		_, own := p.rest[key]
		row, documented := lookupRow(rows, p, key)
		switch d, dep := FindDeprecation(p.Kind, p.Name, key, accepts); {
		case own && dep:
			_, both := p.table[d.Replacement]
			fd.Status, fd.Note, fd.Doc = StatusWarned, d.Notice(both), docs.CompatPage+"#deprecated-and-removed-options"
		case own && accepts != nil && !accepts(key):
			fd.Status, fd.Note = StatusUnsupported, "unknown key: "+p.ID()+" in morse has no such option"
		case documented && strings.Contains(row.Status, "warned"):
			fd.Status, fd.Note, fd.Doc = StatusWarned, row.Note, docs.CompatPage+"#"+row.Anchor
		case documented && strings.Contains(row.Status, "different"):
			fd.Status, fd.Note, fd.Doc = StatusDiffers, row.Note, docs.CompatPage+"#"+row.Anchor
		}
		out = append(out, fd)
	}
	slices.SortStableFunc(out[1:], func(a, b Finding) int { return a.Line - b.Line })
	return out
}

// compatRows indexes the compatibility page's rows by section and key: "inputs.tail/pipe",
// and "options/inputs/alias" for the options every plugin of a kind takes.
func compatRows() map[string]docs.Row {
	m := map[string]docs.Row{}
	for _, r := range docs.CompatRows() {
		if r.Kind != "" {
			m["options/"+r.Kind+"/"+r.Key] = r
			continue
		}
		for _, s := range strings.Split(r.Section, ", ") {
			m[s+"/"+r.Key] = r
		}
	}
	return m
}

func lookupRow(rows map[string]docs.Row, p *Plugin, key string) (docs.Row, bool) {
	for _, k := range []string{p.ID() + "/" + key, "options/" + p.Kind + "/" + key, "options/all/" + key} {
		if r, ok := rows[k]; ok {
			return r, true
		}
	}
	return docs.Row{}, false
}
