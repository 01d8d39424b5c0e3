package plugintest

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/morse-agent/morse"
)

// BenchProcessor measures p on the batch ms. Beside the usual figures per batch it reports
// ns/metric, allocs/metric, and cpu-ns/metric: the process's CPU time per metric, which
// stays meaningful on a machine shared with other work, where wall time is inflated by
// waiting for a core. Each round hands p a fresh copy of ms, because Apply may reuse the
// batch's backing array for its result.
func BenchProcessor(b *testing.B, p morse.Processor, ms []morse.Metric) {
	b.Helper()
	buf := make([]morse.Metric, len(ms))
	var before, after runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		copy(buf, ms)
		p.Apply(buf)
		n++
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	metrics := float64(n * len(ms))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/metrics, "ns/metric")
	b.ReportMetric(float64(cpu.Nanoseconds())/metrics, "cpu-ns/metric")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/metrics, "allocs/metric")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
