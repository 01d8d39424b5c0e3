package batch

import "context"

// fallbackBuffer is a buffer that may hold metrics in memory because its storage refused
// them, such as a DiskBuffer on a full disk. The Writer holds its inputs back meanwhile and
// publishes how many in buffer_memory_fallback.
type fallbackBuffer interface {
	// MemoryFallback is how many metrics are held in memory that the buffer promised to
	// keep elsewhere.
	MemoryFallback() int
	// setOnHold sets the function told when metrics start or stop being held in memory.
	setOnHold(f func(held int64))
}

// watchFallback ties a buffer that may fall back to memory to the gate and the
// buffer_memory_fallback gauge. A failing sink never holds the inputs back (the gate's
// health), but a buffer that can keep their metrics only in memory does (its hold): what a
// listener acknowledged, or a tracked input counts done, must be on disk.
func (w *Writer) watchFallback() {
	fb, ok := w.buf.(fallbackBuffer)
	if !ok {
		return
	}
	w.fallback = fb
	w.stats.memFallback = w.stats.series.Counter("buffer_memory_fallback")
	fb.setOnHold(func(held int64) {
		w.stats.memFallback.Set(held)
		w.gate.Hold(held > 0)
	})
}

// WaitForDisk blocks while the writer's buffer holds metrics in memory because its disk
// refused them, until they reach the disk or the sink or leave the buffer, the writer
// closes, or ctx ends; it then returns ctx's error. A listener that acknowledges what it
// received calls it before it answers, so that an acknowledgement means what the disk
// buffer promises: unlike WaitForRoom, it does not wait for a healthy output's backlog.
func (w *Writer) WaitForDisk(ctx context.Context) error { return w.gate.WaitReleased(ctx) }

// HoldsInMemory reports whether WaitForDisk would block now.
func (w *Writer) HoldsInMemory() bool { return w.gate.Held() }
