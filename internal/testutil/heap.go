package testutil

import (
	"runtime"
	"strconv"

	"github.com/morse-agent/morse"
)

// HeapAlloc collects garbage twice (the second pass frees what the first one's finalizers
// released) and returns the bytes of live heap objects.
func HeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// DistinctTags returns n tag lists, each the fixed tags followed by key=<first+i>, built with
// a few allocations for all of them, so that a test that feeds millions of distinct series
// spends its time in the plugin rather than in building metrics. The lists share backing
// arrays, so a plugin that keeps one metric keeps its neighbours' tags alive too, a few
// hundred bytes per thousand.
func DistinctTags(first, n int, key string, fixed ...morse.Tag) [][]morse.Tag {
	var digits []byte
	ends := make([]int, n)
	for i := range n {
		digits = strconv.AppendInt(digits, int64(first+i), 10)
		ends[i] = len(digits)
	}
	text := string(digits)
	per := len(fixed) + 1
	tags := make([]morse.Tag, per*n)
	out := make([][]morse.Tag, n)
	start := 0
	for i := range n {
		t := tags[per*i : per*(i+1) : per*(i+1)]
		copy(t, fixed)
		t[per-1] = morse.Tag{Key: key, Value: text[start:ends[i]]}
		out[i] = t
		start = ends[i]
	}
	return out
}
