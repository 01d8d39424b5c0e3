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
// 112 bytes at every call: a size summed through Name, Tags and Fields took twice as long,
// in a buffer that sizes every metric it adds (BenchmarkMemSize).
func MemSize(m *Metric) int64 {
	if m.line != "" {
		return allocSize(int64(len(m.line)))
	}
	tags, fields := m.tags, m.fields
	// Small strings: their bytes, and half a 16-byte size-class step each for the rounding.
	strs := len(m.name) + 8 + 16*(len(tags)+len(fields))
	for _, t := range tags {
		strs += len(t.Key) + len(t.Value)
	}
	for i := range fields {
		strs += len(fields[i].Key) + len(fields[i].Value.str)
	}
	return int64(strs) + allocSize(int64(cap(tags))*tagSize) + allocSize(int64(cap(fields))*fieldSize)
}

// The sizes of a tag and a field, the elements of a metric's arrays.
const (
	tagSize   = int64(unsafe.Sizeof(Tag{}))
	fieldSize = int64(unsafe.Sizeof(Field{}))
)

// allocSize approximates the size of the block Go's allocator hands out for n bytes (see
// blockSize), looked up for up to 1 KiB, which covers the tag and field arrays of nearly
// every metric and most lines: a lookup costs less than the computation.
func allocSize(n int64) int64 {
	// Rounding up to 16 bytes first gives the same figure: blockSize's steps are multiples
	// of 16 that change at powers of two.
	if i := uint64(n+15) / 16; i < uint64(len(smallBlocks)) {
		return smallBlocks[i]
	}
	return blockSize(n)
}

// smallBlocks holds blockSize of every multiple of 16 bytes up to 1 KiB.
var smallBlocks = func() (t [1<<10/16 + 1]int64) {
	for i := range t {
		t[i] = blockSize(int64(i) * 16)
	}
	return t
}()

// blockSize approximates the size of the block Go's allocator hands out for n bytes: a size
// class for small objects, whose steps are at most an eighth of the size, and whole 8 KiB
// pages past 32 KiB. Zero bytes take nothing.
func blockSize(n int64) int64 {
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
