package prometheusclient

import (
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// Telegraf serves, unless collectors_exclude says otherwise, the Go client library's
// gocollector and process collector. morse serves their most used series, by the same
// names: the families ending in _total are counters, the others (collectorGauges) gauges.
var collectorGauges = map[string]bool{
	"go_goroutines": true, "go_threads": true, "go_memstats_alloc_bytes": true,
	"go_memstats_sys_bytes": true, "go_memstats_heap_alloc_bytes": true,
	"go_memstats_heap_inuse_bytes": true, "go_memstats_heap_idle_bytes": true,
	"go_memstats_heap_objects": true, "go_memstats_next_gc_bytes": true,
	"go_memstats_last_gc_time_seconds": true,
	"process_resident_memory_bytes":    true, "process_virtual_memory_bytes": true,
	"process_open_fds": true, "process_max_fds": true, "process_start_time_seconds": true,
}

// goMetrics is the gocollector's series, from runtime.ReadMemStats.
func goMetrics(now time.Time) morse.Metric {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f := func(k string, v float64) morse.Field { return morse.Field{Key: k, Value: morse.Float(v)} }
	return morse.NewMetric("prometheus", nil, []morse.Field{
		f("go_goroutines", float64(runtime.NumGoroutine())),
		f("go_threads", float64(pprof.Lookup("threadcreate").Count())),
		f("go_memstats_alloc_bytes", float64(ms.Alloc)),
		f("go_memstats_alloc_bytes_total", float64(ms.TotalAlloc)),
		f("go_memstats_sys_bytes", float64(ms.Sys)),
		f("go_memstats_mallocs_total", float64(ms.Mallocs)),
		f("go_memstats_frees_total", float64(ms.Frees)),
		f("go_memstats_heap_alloc_bytes", float64(ms.HeapAlloc)),
		f("go_memstats_heap_inuse_bytes", float64(ms.HeapInuse)),
		f("go_memstats_heap_idle_bytes", float64(ms.HeapIdle)),
		f("go_memstats_heap_objects", float64(ms.HeapObjects)),
		f("go_memstats_next_gc_bytes", float64(ms.NextGC)),
		f("go_memstats_last_gc_time_seconds", float64(ms.LastGC)/1e9),
	}, now)
}

var self struct {
	once sync.Once
	p    *process.Process
}

// processMetrics is the process collector's series, read as procstat reads a process.
func processMetrics(now time.Time) (morse.Metric, bool) {
	self.once.Do(func() { self.p, _ = process.NewProcess(int32(os.Getpid())) })
	p := self.p
	if p == nil {
		return morse.Metric{}, false
	}
	var fields []morse.Field
	add := func(k string, v float64) { fields = append(fields, morse.Field{Key: k, Value: morse.Float(v)}) }
	if t, err := p.Times(); err == nil {
		add("process_cpu_seconds_total", t.User+t.System)
	}
	if m, err := p.MemoryInfo(); err == nil {
		add("process_resident_memory_bytes", float64(m.RSS))
		add("process_virtual_memory_bytes", float64(m.VMS))
	}
	if n, err := p.NumFDs(); err == nil {
		add("process_open_fds", float64(n))
	}
	if ls, err := p.Rlimit(); err == nil {
		for _, l := range ls {
			if l.Resource == process.RLIMIT_NOFILE {
				add("process_max_fds", float64(l.Soft))
			}
		}
	}
	if ms, err := p.CreateTime(); err == nil {
		add("process_start_time_seconds", float64(ms/1000))
	}
	return morse.NewMetric("prometheus", nil, fields, now), len(fields) > 0
}

// internalMetrics are morse's own counters as inputs.internal reports them by default: the
// instances of one plugin with equal tags summed, every series tagged with the version.
func internalMetrics(reg *selfstat.Registry, now time.Time) []morse.Metric {
	type merged struct {
		sample selfstat.Sample
		index  map[string]int
	}
	var order []*merged
	byKey := map[string]*merged{}
	for _, s := range reg.Snapshot() {
		s.Tags = slices.DeleteFunc(s.Tags, func(t selfstat.Tag) bool { return t.Key == selfstat.IDTag })
		var kb strings.Builder
		kb.WriteString(s.Measurement)
		for _, t := range s.Tags {
			kb.WriteString("\x00" + t.Key + "\x00" + t.Value)
		}
		m := byKey[kb.String()]
		if m == nil {
			m = &merged{sample: s, index: map[string]int{}}
			for i, f := range s.Fields {
				m.index[f.Key] = i
			}
			byKey[kb.String()] = m
			order = append(order, m)
			continue
		}
		for _, f := range s.Fields {
			if i, ok := m.index[f.Key]; ok {
				m.sample.Fields[i].Value += f.Value
			} else {
				m.index[f.Key] = len(m.sample.Fields)
				m.sample.Fields = append(m.sample.Fields, f)
			}
		}
	}
	version := reg.Version()
	out := make([]morse.Metric, 0, len(order))
	for _, m := range order {
		if len(m.sample.Fields) == 0 {
			continue
		}
		tags := []morse.Tag{{Key: "version", Value: version}}
		for _, t := range m.sample.Tags {
			tags = append(tags, morse.Tag{Key: t.Key, Value: t.Value})
		}
		fields := make([]morse.Field, len(m.sample.Fields))
		for i, f := range m.sample.Fields {
			fields[i] = morse.Field{Key: f.Key, Value: morse.Int(f.Value)}
		}
		out = append(out, morse.NewMetric(m.sample.Measurement, tags, fields, now))
	}
	return out
}
