package morse

import (
	"math/bits"
	"unsafe"
)

// MemSize approximates the heap memory that m points to, each allocation rounded up as
// Go's allocator rounds it: for a line metric (NewLineMetric) its text; for another, its
// name, its tag and field arrays and their strings. The Metric value itself is not counted:
// whoever holds it knows where it lies. Strings that several metrics share, such as tag
// keys, are counted for each, so the figure errs high. A memory buffer counts its bytes by
// it (batch.MetricSize).
//
// It takes a pointer, unlike Metric's methods, because a value method copies the Metric's
// 112 bytes at every call, and the four calls a size needs cost four times the sum itself
// in a buffer that sizes every metric it adds.
func MemSize(m *Metric) int64 {
	if m.line != "" {
		return allocSize(int64(len(m.line)))
	}
	// Small strings: their bytes, and half a 16-byte size-class step each for the rounding.
	strs := len(m.name) + 8 + 16*(len(m.tags)+len(m.fields))
	for i := range m.tags {
		strs += len(m.tags[i].Key) + len(m.tags[i].Value)
	}
	for i := range m.fields {
		strs += len(m.fields[i].Key) + len(m.fields[i].Value.str)
	}
	return int64(strs) + allocSize(int64(cap(m.tags))*tagSize) + allocSize(int64(cap(m.fields))*fieldSize)
}

// The sizes of a tag and a field, the elements of a metric's arrays.
const (
	tagSize   = int64(unsafe.Sizeof(Tag{}))
	fieldSize = int64(unsafe.Sizeof(Field{}))
)

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
