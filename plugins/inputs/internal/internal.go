// Package internal is the inputs.internal plugin: the agent's own metrics under Telegraf's
// names, so that existing dashboards of Telegraf's health keep working. The agent counts what
// it gathers, writes and drops in a selfstat.Registry and hands the registry to this plugin;
// each gather reports every series in it, plus the Go runtime's memory statistics.
//
// Go only lets packages under plugins/inputs import this one, because its path contains an
// "internal" element. The path matches Telegraf's plugin name.
package internal

import (
	"context"
	_ "embed"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Collect statistics about itself"

//go:embed sample.conf
var sampleConfig string

// Self is the inputs.internal plugin and its configuration. Build it with New.
type Self struct {
	// CollectMemstats adds the internal_memstats measurement from runtime.ReadMemStats.
	CollectMemstats bool `toml:"collect_memstats"`
	// CollectGostats adds the internal_gostats measurement from runtime/metrics.
	CollectGostats bool `toml:"collect_gostats"`
	// PerInstance reports each plugin instance on its own, told apart by the "_id" tag;
	// otherwise the instances of one plugin with equal tags are summed, as in Telegraf.
	PerInstance bool `toml:"per_instance"`

	// reg is swapped atomically because the agent may hand over a registry, on start or on
	// reload, while a gather runs.
	reg atomic.Pointer[selfstat.Registry]
}

// New returns the plugin with Telegraf's defaults.
func New() *Self {
	return &Self{CollectMemstats: true}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "internal",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetSelfStats gives the plugin the registry of the agent's own counters. Until it is
// called, or after it is called with nil, gathers report only the runtime's statistics.
func (s *Self) SetSelfStats(r *selfstat.Registry) { s.reg.Store(r) }

// Gather reports, in Telegraf's order, the agent's series, internal_memstats (when
// collect_memstats is on) and internal_gostats (when collect_gostats is on).
func (s *Self) Gather(_ context.Context, acc morse.Accumulator) error {
	now := time.Now()
	if reg := s.reg.Load(); reg != nil {
		for _, m := range s.selfMetrics(reg, now) {
			acc.AddMetric(m)
		}
	}
	if s.CollectMemstats {
		acc.AddMetric(memstats(now))
	}
	if s.CollectGostats {
		acc.AddMetric(gostats(now))
	}
	return nil
}

// selfMetrics turns the registry's series into metrics. Series that end up with equal
// measurement and tags are summed field by field, as Telegraf sums its instances: without
// per_instance the "_id" tag is dropped first, so that every instance of a plugin with equal
// tags counts into one series. Every metric gets the "version" tag, and internal_agent the
// "go_version" tag too.
func (s *Self) selfMetrics(reg *selfstat.Registry, now time.Time) []morse.Metric {
	version := reg.Version()
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	type merged struct {
		sample selfstat.Sample
		index  map[string]int // field key -> position in sample.Fields
	}
	var order []string
	byKey := map[string]*merged{}
	for _, sample := range reg.Snapshot() {
		// A metric needs at least one field; the registry never makes such a series, but a
		// metric without fields could not be written, so it is not worth a failed write.
		if len(sample.Fields) == 0 {
			continue
		}
		if !s.PerInstance {
			sample.Tags = slices.DeleteFunc(sample.Tags, func(t selfstat.Tag) bool { return t.Key == selfstat.IDTag })
		}
		key := seriesKey(sample)
		m, ok := byKey[key]
		if !ok {
			m = &merged{sample: sample, index: map[string]int{}}
			for i, f := range sample.Fields {
				m.index[f.Key] = i
			}
			byKey[key] = m
			order = append(order, key)
			continue
		}
		for _, f := range sample.Fields {
			if i, ok := m.index[f.Key]; ok {
				m.sample.Fields[i].Value += f.Value
				continue
			}
			m.index[f.Key] = len(m.sample.Fields)
			m.sample.Fields = append(m.sample.Fields, f)
		}
	}
	out := make([]morse.Metric, 0, len(order))
	for _, key := range order {
		sample := byKey[key].sample
		extra := []morse.Tag{{Key: "version", Value: version}}
		if sample.Measurement == "internal_agent" {
			extra = append(extra, morse.Tag{Key: "go_version", Value: goVersion})
		}
		out = append(out, fromSample(sample, extra, now))
	}
	return out
}

// seriesKey identifies a sample by measurement and tags, which are sorted.
func seriesKey(s selfstat.Sample) string {
	var b strings.Builder
	b.WriteString(s.Measurement)
	for _, t := range s.Tags {
		b.WriteByte(0)
		b.WriteString(t.Key)
		b.WriteByte(0)
		b.WriteString(t.Value)
	}
	return b.String()
}

// fromSample makes the metric of a sample with the extra tags; the series' own tags win.
func fromSample(sample selfstat.Sample, extra []morse.Tag, now time.Time) morse.Metric {
	tags := make([]morse.Tag, 0, len(sample.Tags)+len(extra))
	for _, t := range sample.Tags {
		tags = append(tags, morse.Tag{Key: t.Key, Value: t.Value})
	}
	fields := make([]morse.Field, len(sample.Fields))
	for i, f := range sample.Fields {
		fields[i] = morse.Field{Key: f.Key, Value: morse.Int(f.Value)}
	}
	return morse.NewMetric(sample.Measurement, tags, fields, now).WithMissingTags(sortTags(extra))
}

func sortTags(tags []morse.Tag) []morse.Tag {
	slices.SortFunc(tags, func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) })
	return tags
}

// memstats reads the Go runtime's memory statistics under Telegraf's field names.
//
// The object count is named heap_objects because that is what Telegraf's code writes, so it
// is the name in existing data and dashboards. Telegraf's README lists heap_objects_bytes,
// a name its code does not emit.
func memstats(now time.Time) morse.Metric {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fields := []morse.Field{
		num("alloc_bytes", m.Alloc),
		num("frees", m.Frees),
		num("heap_alloc_bytes", m.HeapAlloc),
		num("heap_idle_bytes", m.HeapIdle),
		num("heap_in_use_bytes", m.HeapInuse),
		num("heap_objects", m.HeapObjects),
		num("heap_released_bytes", m.HeapReleased),
		num("heap_sys_bytes", m.HeapSys),
		num("mallocs", m.Mallocs),
		num("num_gc", uint64(m.NumGC)), // uint32 in Go; Telegraf's metrics widen it to uint64
		num("pointer_lookups", m.Lookups),
		num("sys_bytes", m.Sys),
		num("total_alloc_bytes", m.TotalAlloc),
	}
	return morse.NewMetric("internal_memstats", nil, fields, now)
}

// num makes an unsigned field, the type Telegraf emits these counters as (they are uint64 in
// runtime.MemStats). Serializers write it as Telegraf's do: `u` with influx_uint_support, a
// clamped signed integer without.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Uint(v)}
}
