package cardinality

import "github.com/morse-agent/morse/selfstat"

// counters are the guard's self-metrics, reported under internal_cardinality:
//
//	metrics_changed   metrics whose tags the action converted or removed
//	metrics_dropped   metrics that drop_metric dropped
//	tags_converted    tags turned into fields
//	tags_dropped      tags removed (drop_tag, or a conversion with no free field name)
//	field_conflicts   conversions that found the field name taken (see sample.conf)
//	trips             keys that passed max_values
//	server_trips      keys that the database's refusal tripped (Trip)
//	resets            tripped keys that calmed down (reset_after)
//	keys_evicted      keys forgotten to stay within max_memory
//	keys_tracked      keys known now (gauge)
//	keys_tripped      keys the action applies to now, forced ones included (gauge)
//	memory_bytes      memory charged against max_memory now (gauge)
type counters struct {
	changed, dropped, converted, tagsDropped, conflicts *selfstat.Counter
	trips, serverTrips, resets, evicted                 *selfstat.Counter
	tracked, tripped, memory                            *selfstat.Counter
	lastKeys, lastTripped, lastBytes                    int
}

func newCounters(s *selfstat.PluginStats) counters {
	return counters{
		changed: s.Counter("metrics_changed"), dropped: s.Counter("metrics_dropped"),
		converted: s.Counter("tags_converted"), tagsDropped: s.Counter("tags_dropped"),
		conflicts: s.Counter("field_conflicts"), trips: s.Counter("trips"),
		serverTrips: s.Counter("server_trips"), resets: s.Counter("resets"),
		evicted: s.Counter("keys_evicted"), tracked: s.Counter("keys_tracked"),
		tripped: s.Counter("keys_tripped"), memory: s.Counter("memory_bytes"),
		lastKeys: -1,
	}
}

// setGauges stores the gauges that changed, so that an Apply that changed nothing costs no
// atomic store.
func (c *counters) setGauges(t *tracker) {
	if t.keys != c.lastKeys {
		c.lastKeys = t.keys
		c.tracked.Set(int64(t.keys))
	}
	if t.tripped != c.lastTripped {
		c.lastTripped = t.tripped
		c.tripped.Set(int64(t.tripped))
	}
	if t.bytes != c.lastBytes {
		c.lastBytes = t.bytes
		c.memory.Set(int64(t.bytes))
	}
}
