package testutil

import (
	"fmt"
	"runtime"
	"strings"
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
	cpu0 := CPUTime(b)
	n := 0
	for b.Loop() {
		round()
		n++
	}
	cpu := CPUTime(b) - cpu0
	runtime.ReadMemStats(&after)
	metrics := float64(n * perRound)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/metrics, "ns/metric")
	b.ReportMetric(float64(cpu.Nanoseconds())/metrics, "cpu-ns/metric")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/metrics, "allocs/metric")
}

// CPUTime is the user and system CPU time of this process so far: a benchmark's measure of
// work that stays meaningful on a machine shared with other work, where wall time is
// inflated by waiting for a core. It is the one reader of it in the tests.
func CPUTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchAggregator measures a.Add on the metrics of ms, one per call, taken in turn, and
// reports the same figures per metric as BenchProcessor. The series of ms stay within one
// period: Push and Reset are not measured.
func BenchAggregator(b *testing.B, a morse.Aggregator, ms []morse.Metric) {
	b.Helper()
	i := 0
	bench(b, 1, func() {
		a.Add(ms[i])
		if i++; i == len(ms) {
			i = 0
		}
	})
}

// BenchSeries returns one metric for each of n series of a system metric with two tags and
// two float fields, the usual input of a benchmark.
func BenchSeries(t testing.TB, n int) []morse.Metric {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "cpu,cpu=cpu%d,host=web-%d usage_user=%d.5,usage_system=0.5 %d\n", i%8, i/8, i, 1704067200000000000+i)
	}
	return Parse(t, sb.String(), false)
}
