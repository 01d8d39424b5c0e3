package selfstat

// PluginStats lets a plugin count its own events. They appear in the self-metrics that
// inputs.internal reports, under the plugin's measurement and tags. Each plugin instance has
// a series of its own, so two listeners of one plugin without an alias keep exact counts
// each; they are reported with equal tags, as Telegraf reports them.
type PluginStats struct {
	reg    *Registry
	series *Series
}

// NewPluginStats returns stats for one plugin instance. A nil registry gives counters that
// count but are reported nowhere, which suits plugins built in code without an agent.
func NewPluginStats(reg *Registry, measurement string, tags map[string]string) *PluginStats {
	if reg == nil {
		reg = New()
	}
	return &PluginStats{reg: reg, series: reg.NewSeries(measurement, tags)}
}

// Counter returns the named counter of this plugin.
func (s *PluginStats) Counter(field string) *Counter {
	return s.series.Counter(field)
}

// Remove takes the series out of its registry, for a plugin that a reload took away.
func (s *PluginStats) Remove() { s.reg.Remove(s.series) }
