package batch

import (
	"unsafe"

	"github.com/morse-agent/morse"
)

// slotSize is what a memory buffer's ring holds per metric: the Metric, and beside it, in
// an array of its own, its time and size.
const slotSize = int64(unsafe.Sizeof(morse.Metric{}) + unsafe.Sizeof(side{}))

// MetricSize approximates the memory a metric takes in a memory buffer: its slot in the
// ring, and what the metric points to (morse.MemSize), each allocation rounded up as Go's
// allocator rounds it. For a line metric (morse.NewLineMetric) that is its text; for
// another, its name, its tag and field arrays and their strings. Strings that several
// metrics share, such as tag keys, are counted for each, so the figure errs high: a bound
// in MetricSize bytes holds for the heap. BenchmarkMemoryBufferPerByte measures it against
// the heap and the resident size. It costs a few nanoseconds, so a buffer can afford it
// for every metric.
func MetricSize(m morse.Metric) int64 { return metricSize(&m) }

// metricSize is MetricSize without the copy of the metric, for the buffer's hot path.
func metricSize(m *morse.Metric) int64 { return slotSize + morse.MemSize(m) }
