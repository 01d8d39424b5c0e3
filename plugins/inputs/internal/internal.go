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
	"math"
	"runtime"
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
// called, or after it is called with nil, gathers report only the memory statistics.
func (s *Self) SetSelfStats(r *selfstat.Registry) { s.reg.Store(r) }

// Gather reports internal_memstats (when collect_memstats is on) and then one metric per
// series of the registry, with the series' measurement, tags and counters.
func (s *Self) Gather(_ context.Context, acc morse.Accumulator) error {
	now := time.Now()
	if s.CollectMemstats {
		acc.AddMetric(memstats(now))
	}
	reg := s.reg.Load()
	if reg == nil {
		return nil
	}
	for _, sample := range reg.Snapshot() {
		// A metric needs at least one field; the registry never makes such a series, but a
		// metric without fields could not be written, so it is not worth a failed write.
		if len(sample.Fields) == 0 {
			continue
		}
		acc.AddMetric(fromSample(sample, now))
	}
	return nil
}

func fromSample(sample selfstat.Sample, now time.Time) morse.Metric {
	tags := make([]morse.Tag, len(sample.Tags))
	for i, t := range sample.Tags {
		tags[i] = morse.Tag{Key: t.Key, Value: t.Value}
	}
	fields := make([]morse.Field, len(sample.Fields))
	for i, f := range sample.Fields {
		fields[i] = morse.Field{Key: f.Key, Value: morse.Int(f.Value)}
	}
	return morse.NewMetric(sample.Measurement, tags, fields, now)
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
		num("num_gc", uint64(m.NumGC)),
		num("pointer_lookups", m.Lookups),
		num("sys_bytes", m.Sys),
		num("total_alloc_bytes", m.TotalAlloc),
	}
	return morse.NewMetric("internal_memstats", nil, fields, now)
}

// num makes an integer field, the type Telegraf writes these counters as. A value beyond
// int64 is clamped, as Telegraf's line protocol serializer clamps it.
func num(key string, v uint64) morse.Field {
	if v > math.MaxInt64 {
		v = math.MaxInt64
	}
	return morse.Field{Key: key, Value: morse.Int(int64(v))}
}
