package batch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// BenchmarkMemoryBufferBytes measures the heap a full memory buffer holds per buffered
// metric, the metrics' own tags and fields excluded: they are shared by every metric here,
// so what is left is the ring's slot.
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

// BenchmarkMemoryBufferPerByte fills a memory buffer to its default byte bound with lines
// of 100 B, 1 KiB and 1 MiB, parsed by the listeners' parser as line metrics, and reports
// per byte the buffer counts (MetricSize, buffer_bytes): the heap it holds (heap/B), the
// growth of the resident size (rss/B), and the peak resident growth while it filled
// (peak-rss/B), which includes the parser's garbage before the collector runs. heap/B near 1
// says MetricSize is honest; rss/B is what the byte bound costs in memory.
func BenchmarkMemoryBufferPerByte(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("line=%dB", size), func(b *testing.B) {
			var heap, rss, peak float64
			for b.Loop() {
				heap, rss, peak = fillPerByte(b, size)
			}
			b.ReportMetric(heap, "heap/B")
			b.ReportMetric(rss, "rss/B")
			b.ReportMetric(peak, "peak-rss/B")
		})
	}
}

// fillPerByte parses lines of size bytes into a buffer until it evicts for bytes, and
// returns the heap, resident and peak resident growth per buffered byte.
func fillPerByte(b *testing.B, size int) (heap, rss, peak float64) {
	head := "m,host=web-01 v=\""
	tail := "\" 1700000000000000000\n"
	line := []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	chunk := []byte(strings.Repeat(string(line), max(1, (64<<10)/size)))
	var before, after runtime.MemStats
	idle := testutil.IdleRSS(b)
	runtime.ReadMemStats(&before)
	p := influx.Parser{LineMetrics: func() bool { return true }}
	var one morse.Metric
	p.Parse(line, func(m morse.Metric) { one = m })
	// A ring of the slots the bound lets it fill: the slots are allocated up front.
	limit := int(DefaultBufferMaxBytes/MetricSize(one)) + 1
	buf := NewBoundedMemoryBuffer(limit, Eviction{}, MemoryBounds{MaxBytes: DefaultBufferMaxBytes})
	ms := make([]morse.Metric, 0, 1024)
	for buf.Len() < limit-len(chunk)/size-1 {
		ms = ms[:0]
		p.Parse(chunk, func(m morse.Metric) { ms = append(ms, m) })
		buf.AddBatch(ms)
	}
	clear(ms)
	peakGrowth := testutil.PeakGrowth(b, idle)
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := float64(buf.Bytes())
	heap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / held
	rss = float64(testutil.ProcStatus(b, "VmRSS")-idle) / held
	runtime.KeepAlive(buf)
	return heap, rss, float64(peakGrowth) / held
}
