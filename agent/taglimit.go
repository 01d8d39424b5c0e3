package agent

import (
	"fmt"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

// tripper is a processor that can act on a tag key at once, as processors.cardinality does
// when the database refuses the key's new values.
type tripper interface {
	Trip(measurement, key string)
}

// guardLink is an output that reports tag-limit refusals, with the guard its options name.
type guardLink struct {
	out  morse.TagLimitReporter
	trip func(measurement, key string)
}

// findGuards resolves what every morse.TagLimitReporter output names: the processor whose
// alias it is, or for a processor without an alias, whose name it is. It changes nothing,
// so that a reload that fails leaves the running outputs as they were; linkGuards does.
func findGuards(procs []*config.ProcessorConfig, outputs []*config.OutputConfig) ([]guardLink, error) {
	var links []guardLink
	for _, oc := range outputs {
		r, ok := oc.Plugin.(morse.TagLimitReporter)
		if !ok || r.TagLimitGuard() == "" {
			continue
		}
		trip, err := guardNamed(procs, r.TagLimitGuard())
		if err != nil {
			return nil, fmt.Errorf("outputs.%s (%s): %w", oc.Name, oc.Source, err)
		}
		links = append(links, guardLink{out: r, trip: trip})
	}
	return links, nil
}

// guardNamed returns the trip function of the one processor named name. A processor is
// decoded twice, once for what the inputs gather and once for the aggregators' summaries,
// so the function trips both instances: both feed the outputs.
func guardNamed(procs []*config.ProcessorConfig, name string) (func(measurement, key string), error) {
	var found *config.ProcessorConfig
	for _, pc := range procs {
		if pc.Common.Alias != name && (pc.Common.Alias != "" || pc.Name != name) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("cardinality_guard %q names two processors (%s and %s); give each an alias", name, found.Source, pc.Source)
		}
		found = pc
	}
	if found == nil {
		return nil, fmt.Errorf("cardinality_guard %q names no processor: set it to the alias of a [[processors.cardinality]]", name)
	}
	first, ok := found.Plugin.(tripper)
	if !ok {
		return nil, fmt.Errorf("cardinality_guard %q: processors.%s (%s) cannot act on a tag key; name a processors.cardinality", name, found.Name, found.Source)
	}
	second, _ := found.AfterAggregators.(tripper)
	if found.AfterAggregators == nil || found.AfterAggregators == found.Plugin || second == nil {
		return first.Trip, nil
	}
	return func(measurement, key string) {
		first.Trip(measurement, key)
		second.Trip(measurement, key)
	}, nil
}

// linkGuards hands each output its guard.
func linkGuards(links []guardLink) {
	for _, l := range links {
		l.out.SetTagLimitGuard(l.trip)
	}
}
