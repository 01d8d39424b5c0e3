package batch

import "github.com/morse-agent/morse"

// Tracked metrics (morse.TrackingAccumulator) hold a reference on their group while the
// writer holds them. The writer takes it as it buffers them and gives it back once they
// leave for good: written (settle in the flush loop), evicted, or left over at shutdown. A
// persistent buffer keeps what it takes across a crash of the process, so it gives a
// tracked metric's reference back, delivered, as soon as the metric is on its disk; only a
// power cut within the buffer's sync interval can lose it then, which is the disk buffer's
// own promise. What it holds in memory because its disk refused it keeps its reference
// until it reaches the disk, or leaves the buffer as from a memory buffer (diskspill.go).

// retainTracked takes a reference for every tracked metric of ms, which the buffer will
// hold, and returns ms. From the first one on, the buffer hands over what it evicts, so that
// evicted metrics give their references back.
func (w *Writer) retainTracked(ms []morse.Metric) []morse.Metric {
	if !anyTracked(ms) {
		return ms
	}
	if morse.RetainTracked(ms) > 0 && !w.tracked.Load() {
		w.tracked.Store(true)
	}
	return ms
}

func anyTracked(ms []morse.Metric) bool {
	for i := range ms {
		if ms[i].Tracked() {
			return true
		}
	}
	return false
}

// writeTracked is Write for a tracked metric.
func (w *Writer) writeTracked(m morse.Metric) error {
	return w.WriteBatch([]morse.Metric{m})
}

// evicted is the Eviction report of the writer's buffer: evicted tracked metrics are done,
// not delivered.
func (w *Writer) evicted(reason string, n int, ms []morse.Metric) {
	morse.SettleTracked(ms, false)
	w.drops.evicted(reason, n, ms)
}

// refused drops what arrives after Close, counted under shutdown. It runs in the goroutine
// of the input that added them, so they are not dead-lettered (see DeadLetter). Tracked
// metrics among them mark their groups not delivered.
func (w *Writer) refused(ms []morse.Metric) {
	w.drops.drop(DropEvent{Reason: morse.ReasonShutdown, Count: len(ms), Metrics: ms, Err: ErrClosed}, false)
	if anyTracked(ms) {
		morse.RetainTracked(ms)
		morse.SettleTracked(ms, false)
	}
}
