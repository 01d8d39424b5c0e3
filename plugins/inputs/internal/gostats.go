package internal

import (
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// goName turns a runtime/metrics name such as /cpu/classes/gc/mark/assist:cpu-seconds into
// Telegraf's field name, cpu_classes_gc_mark_assist_cpu_seconds.
var goName = strings.NewReplacer("/", "_", ":", "_", "-", "_")

// gostats reads every metric the Go runtime offers (runtime/metrics) into internal_gostats,
// tagged with the Go version, as Telegraf's collect_gostats does: counters and gauges keep
// their kind (unsigned or float) and a histogram is reduced to the bucket that holds its
// median. A kind that later Go releases may add is left out, as Telegraf leaves it out.
func gostats(now time.Time) morse.Metric {
	descs := metrics.All()
	samples := make([]metrics.Sample, len(descs))
	for i := range descs {
		samples[i].Name = descs[i].Name
	}
	metrics.Read(samples)
	fields := make([]morse.Field, 0, len(samples))
	for _, s := range samples {
		key := goName.Replace(strings.TrimPrefix(s.Name, "/"))
		switch s.Value.Kind() {
		case metrics.KindUint64:
			fields = append(fields, morse.Field{Key: key, Value: morse.Uint(s.Value.Uint64())})
		case metrics.KindFloat64:
			fields = append(fields, morse.Field{Key: key, Value: morse.Float(s.Value.Float64())})
		case metrics.KindFloat64Histogram:
			// An empty histogram's median is its first bucket, whose bound is -Inf: line
			// protocol cannot carry it, and Telegraf's serializer leaves it out too.
			if m := medianBucket(s.Value.Float64Histogram()); !math.IsInf(m, 0) {
				fields = append(fields, morse.Field{Key: key, Value: morse.Float(m)})
			}
		}
	}
	tags := []morse.Tag{{Key: "go_version", Value: strings.TrimPrefix(runtime.Version(), "go")}}
	return morse.NewMetric("internal_gostats", tags, fields, now)
}

// medianBucket returns the lower bound of the first bucket at which half of the histogram's
// observations are counted: Telegraf's rough median, kept so that values compare with its.
func medianBucket(h *metrics.Float64Histogram) float64 {
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	half := total / 2
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= half {
			return h.Buckets[i]
		}
	}
	return 0
}
