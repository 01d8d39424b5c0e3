package plugintest

import "runtime"

// HeapAlloc collects garbage twice (the second pass frees what the first one's finalizers
// released) and returns the bytes of live heap objects.
func HeapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
