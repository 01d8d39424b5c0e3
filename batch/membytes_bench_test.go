package batch

import (
	"runtime"
	"testing"
	"time"

	"github.com/morse-agent/morse"
)

// BenchmarkMemoryBufferBytes measures the heap a full memory buffer holds per buffered
// metric, the metrics' own tags and fields excluded: they are shared by every metric here,
// so what is left is the ring's slot, the Metric value itself.
func BenchmarkMemoryBufferBytes(b *testing.B) {
	const n = 100_000
	m := morse.NewMetric("cpu", []morse.Tag{{Key: "host", Value: "a"}},
		[]morse.Field{{Key: "usage", Value: morse.Float(1)}}, time.Unix(1, 0))
	var perMetric float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		buf := NewMemoryBuffer(n, Eviction{})
		for range n {
			buf.Add(m)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perMetric = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(buf)
	}
	b.ReportMetric(perMetric, "heap-B/metric")
}
