package morse

import (
	"maps"

	"github.com/morse-agent/morse/internal/selfstat"
)

// Counter is a self-metric counter; Add and Set are safe for concurrent use.
type Counter = selfstat.Counter

// PluginStats lets a plugin count its own events. They appear in the self-metrics that
// inputs.internal reports, under the plugin's measurement and tags.
type PluginStats struct {
	reg         *selfstat.Registry
	measurement string
	tags        map[string]string
}

// NewPluginStats returns stats for one plugin instance. A nil registry gives counters that
// count but are reported nowhere, which suits plugins built in code without an agent.
func NewPluginStats(reg *selfstat.Registry, measurement string, tags map[string]string) *PluginStats {
	if reg == nil {
		reg = selfstat.New()
	}
	return &PluginStats{reg: reg, measurement: measurement, tags: maps.Clone(tags)}
}

// Counter returns the named counter of this plugin.
func (s *PluginStats) Counter(field string) *Counter {
	return s.reg.Counter(s.measurement, s.tags, field)
}
