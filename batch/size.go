package batch

import (
	"math/bits"
	"unsafe"

	"github.com/morse-agent/morse"
)

// Sizes of what a buffered metric holds, for MetricSize.
const (
	entrySize = int64(unsafe.Sizeof(entry{}))       // a memory buffer's slot: the Metric, its time and size
	tagSize   = int64(unsafe.Sizeof(morse.Tag{}))   // an element of a metric's tag array
	fieldSize = int64(unsafe.Sizeof(morse.Field{})) // an element of its field array
)

// MetricSize approximates the memory a metric takes in a memory buffer: its slot in the
// ring, and what the metric points to, each allocation rounded up as Go's allocator rounds
// it. For a line metric (morse.NewLineMetric) that is its text; for another, its name, its
// tag and field arrays and their strings. Strings that several metrics share, such as tag
// keys, are counted for each, so the figure errs high: a bound in MetricSize bytes holds
// for the heap. BenchmarkMemoryBufferBytes measures it against the heap and the resident
// size. It costs a few nanoseconds, so a buffer can afford it for every metric.
func MetricSize(m morse.Metric) int64 { return metricSize(&m) }

// metricSize is MetricSize without the copy of the metric, for the buffer's hot path.
func metricSize(m *morse.Metric) int64 {
	if lt, ok := m.Line(); ok {
		return entrySize + allocSize(int64(len(lt.Text)))
	}
	tags, fields := m.Tags(), m.Fields()
	// Small strings: their bytes, and half a 16-byte size-class step each for the rounding.
	strs := len(m.Name()) + 8 + 16*(len(tags)+len(fields))
	for i := range tags {
		strs += len(tags[i].Key) + len(tags[i].Value)
	}
	for i := range fields {
		strs += len(fields[i].Key) + len(fields[i].Value.Str())
	}
	return entrySize + int64(strs) + allocSize(int64(cap(tags))*tagSize) + allocSize(int64(cap(fields))*fieldSize)
}

// allocSize approximates the size of the block Go's allocator hands out for n bytes: a size
// class for small objects, whose steps are at most an eighth of the size, and whole 8 KiB
// pages past 32 KiB. Zero bytes take nothing.
func allocSize(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 16:
		return 16
	case n > 32<<10:
		return (n + 8<<10 - 1) &^ (8<<10 - 1)
	}
	step := int64(1) << max(4, bits.Len64(uint64(n-1))-3) // an eighth of the next power of two
	return (n + step - 1) &^ (step - 1)
}
