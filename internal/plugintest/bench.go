package plugintest

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/morse-agent/morse"
)

// BenchProcessor measures p on the batch ms, handing it the whole batch in one Apply call
// per round. See BenchProcessorSingly for one metric per call.
//
// Beside the usual figures per round it reports ns/metric, allocs/metric, and cpu-ns/metric:
// the process's CPU time per metric, which stays meaningful on a machine shared with other
// work, where wall time is inflated by waiting for a core.
func BenchProcessor(b *testing.B, p morse.Processor, ms []morse.Metric) {
	b.Helper()
	buf := make([]morse.Metric, len(ms))
	bench(b, len(ms), func() {
		copy(buf, ms) // Apply may reuse the batch's backing array for its result
		p.Apply(buf)
	})
}

// BenchProcessorSingly measures p with one metric per Apply call, taking the metrics of ms
// in turn, which is how an input that adds one metric at a time drives a processor.
func BenchProcessorSingly(b *testing.B, p morse.Processor, ms []morse.Metric) {
	b.Helper()
	buf := make([]morse.Metric, 1)
	i := 0
	bench(b, 1, func() {
		buf[0] = ms[i]
		if i++; i == len(ms) {
			i = 0
		}
		p.Apply(buf)
	})
}

func bench(b *testing.B, perRound int, round func()) {
	var before, after runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		round()
		n++
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	metrics := float64(n * perRound)
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
