package churn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// maxGrowthPct is the target: RSS growth between the second and the last tenth of the run.
const maxGrowthPct = 1.0

// report is the soak's figures.
type report struct {
	Date          string           `json:"date"`
	GoVersion     string           `json:"go"`
	CPUs          int              `json:"cpus"`
	Wall          string           `json:"wall"`
	Equivalent    string           `json:"equivalent"`
	Compression   float64          `json:"compression"`
	GuardWindow   string           `json:"guard_window"` // 1 h of simulated time
	Measurements  int              `json:"measurements"`
	Fixed         int              `json:"fixed_ids"`
	Rotating      int              `json:"rotating_ids"`
	NewPerRound   int              `json:"new_ids_per_interval"`
	Interval      string           `json:"simulated_interval"`
	Rounds        int64            `json:"rounds"`
	DistinctIDs   int64            `json:"distinct_ids_per_measurement"`
	Sent          int64            `json:"metrics_sent"`
	Delivered     int64            `json:"metrics_delivered"`
	RatePerSec    float64          `json:"metrics_per_wall_second"`
	FeedErrors    int64            `json:"feed_errors"`
	LastFeedError string           `json:"last_feed_error,omitempty"`
	RSSSecondKiB  int64            `json:"rss_second_tenth_kib"` // mean over the second tenth
	RSSLastKiB    int64            `json:"rss_last_tenth_kib"`   // mean over the last tenth
	RSSPeakKiB    int64            `json:"rss_peak_kib"`
	GrowthPct     float64          `json:"rss_growth_pct"`
	TargetPct     float64          `json:"target_pct"`
	Pass          bool             `json:"pass"`
	Guard         map[string]int64 `json:"guard"` // internal_cardinality at the end
	// The Go heap in use (internal_memstats heap_in_use_bytes), means over the same
	// tenths: whether the live data grows, as opposed to the runtime's high-water mark.
	HeapSecondKiB int64        `json:"heap_in_use_second_tenth_kib"`
	HeapLastKiB   int64        `json:"heap_in_use_last_tenth_kib"`
	HeapGrowthPct float64      `json:"heap_in_use_growth_pct"`
	Samples       []sample     `json:"samples"`
	Heap          []heapSample `json:"heap"`
}

// heapSample is one internal_memstats reading of the agent.
type heapSample struct {
	WallS        float64 `json:"wall_s"`
	HeapInUseKiB int64   `json:"heap_in_use_kib"`
	// HeapMappedKiB is heap_sys_bytes less heap_released_bytes: the heap memory the runtime
	// holds from the system, in use or not, which is what the heap adds to RSS.
	HeapMappedKiB int64 `json:"heap_mapped_kib"`
	// RuntimeKiB is sys_bytes less heap_released_bytes: everything the Go runtime holds from
	// the system, the heap with stacks, the collector's metadata and the rest.
	RuntimeKiB int64 `json:"runtime_kib"`
}

// setHeap stores the heap readings and their growth between the second and the last tenth.
func (r *report) setHeap(h []heapSample) {
	r.Heap = h
	mean := func(i int) int64 {
		lo, hi := len(h)*i/10, len(h)*(i+1)/10
		if hi <= lo {
			return 0
		}
		var sum int64
		for _, s := range h[lo:hi] {
			sum += s.HeapInUseKiB
		}
		return sum / int64(hi-lo)
	}
	r.HeapSecondKiB, r.HeapLastKiB = mean(1), mean(9)
	if r.HeapSecondKiB > 0 {
		r.HeapGrowthPct = 100 * float64(r.HeapLastKiB-r.HeapSecondKiB) / float64(r.HeapSecondKiB)
	}
}

// readHeap returns the agent's heap_in_use_bytes readings, timed from the first.
func readHeap(path string) []heapSample {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []heapSample
	var first time.Time
	var p influx.Parser
	p.Parse(data, func(m morse.Metric) {
		if m.Name() != "internal_memstats" {
			return
		}
		inUse, ok1 := memstat(m, "heap_in_use_bytes")
		sys, ok2 := memstat(m, "heap_sys_bytes")
		released, ok3 := memstat(m, "heap_released_bytes")
		total, ok4 := memstat(m, "sys_bytes")
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return
		}
		if first.IsZero() {
			first = m.Time()
		}
		out = append(out, heapSample{WallS: m.Time().Sub(first).Seconds(), HeapInUseKiB: inUse / 1024,
			HeapMappedKiB: (sys - released) / 1024, RuntimeKiB: (total - released) / 1024})
	})
	return out
}

// memstat reads an integer field of internal_memstats, signed or unsigned.
func memstat(m morse.Metric, key string) (int64, bool) {
	v, ok := m.Field(key)
	switch {
	case ok && v.Type() == morse.TypeInt:
		return v.Int(), true
	case ok && v.Type() == morse.TypeUint:
		return int64(v.Uint()), true
	}
	return 0, false
}

func newReport(o *options, window time.Duration, samples []sample, f *feeder, delivered int64, guard map[string]int64) *report {
	r := &report{
		Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Wall: o.duration.String(), Equivalent: o.equivalent.String(),
		Compression: float64(o.equivalent) / float64(o.duration), GuardWindow: window.String(),
		Measurements: o.work.measurements, Fixed: o.work.fixed, Rotating: o.work.rotating,
		NewPerRound: o.work.newPerInterval, Interval: o.work.interval.String(),
		Rounds: f.rounds.Load(), DistinctIDs: o.work.distinct(f.rounds.Load()),
		Sent: f.sent.Load(), Delivered: delivered, RatePerSec: float64(f.sent.Load()) / o.duration.Seconds(),
		FeedErrors: f.errors.Load(), TargetPct: maxGrowthPct, Guard: guard, Samples: samples,
	}
	r.RSSSecondKiB, r.RSSLastKiB = tenthMean(samples, 1), tenthMean(samples, 9)
	for _, s := range samples {
		r.RSSPeakKiB = max(r.RSSPeakKiB, s.RSSKiB)
	}
	if r.RSSSecondKiB > 0 {
		r.GrowthPct = 100 * float64(r.RSSLastKiB-r.RSSSecondKiB) / float64(r.RSSSecondKiB)
	}
	r.Pass = r.RSSSecondKiB > 0 && r.GrowthPct < maxGrowthPct && r.FeedErrors == 0 && r.Delivered >= r.Sent
	return r
}

// readReport loads a report that write stored.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// tenths lists the mean of each tenth of xs, in MiB.
func tenths[T any](xs []T, kib func(T) int64) string {
	var parts []string
	for i := range 10 {
		lo, hi := len(xs)*i/10, len(xs)*(i+1)/10
		if hi <= lo {
			continue
		}
		var sum int64
		for _, x := range xs[lo:hi] {
			sum += kib(x)
		}
		parts = append(parts, fmt.Sprintf("%.1f", float64(sum)/float64(hi-lo)/1024))
	}
	return strings.Join(parts, " ")
}

// tenthMean is the mean RSS over the samples of tenth i (0 to 9) of the run.
func tenthMean(samples []sample, i int) int64 {
	n := len(samples)
	lo, hi := n*i/10, n*(i+1)/10
	if hi <= lo {
		return 0
	}
	var sum int64
	for _, s := range samples[lo:hi] {
		sum += s.RSSKiB
	}
	return sum / int64(hi-lo)
}

// readGuardCounters returns the last internal_cardinality counters the agent wrote.
func readGuardCounters(path string) map[string]int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	// A processor runs as two instances, one for what the inputs gather and one for the
	// aggregators' summaries, each with a series of its own under the same tags: the
	// figures of one gather are the sum of its lines.
	out := map[string]int64{}
	var last time.Time
	var p influx.Parser
	p.Parse(data, func(m morse.Metric) {
		if m.Name() != "internal_cardinality" {
			return
		}
		if m.Time().After(last) {
			last = m.Time()
			clear(out)
		}
		for _, f := range m.Fields() {
			if f.Value.Type() == morse.TypeInt {
				out[f.Key] += f.Value.Int()
			}
		}
	})
	return out
}

// write stores the report as OUT.json, OUT.md and OUT.png.
func (r *report) write(out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(out+".md", []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	png, err := r.plot()
	if err != nil {
		return err
	}
	return os.WriteFile(out+".png", png, 0o644)
}

// markdown is the report for people.
func (r *report) markdown() string {
	var b strings.Builder
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "# Churn soak (`make soak-churn`, morse-bench churn)\n\n")
	fmt.Fprintf(&b, "%s, %s, %d CPUs. %s of wall time standing for %s (x%.0f); the guard's window, 1 h of simulated time, is %s.\n\n",
		r.Date, r.GoVersion, r.CPUs, r.Wall, r.Equivalent, r.Compression, r.GuardWindow)
	fmt.Fprintf(&b, "Workload: %d measurements, each with %d fixed and %d rotating identifiers as the tag `id`, %d new ones every simulated %s: %d rounds, %d distinct identifiers per measurement.\n",
		r.Measurements, r.Fixed, r.Rotating, r.NewPerRound, r.Interval, r.Rounds, r.DistinctIDs)
	fmt.Fprintf(&b, "Pipeline: inputs.influxdb_listener -> processors.cardinality (max_values 10000) -> outputs.influxdb -> a discarding sink.\n\n")
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| metrics sent / delivered | %d / %d |\n", r.Sent, r.Delivered)
	fmt.Fprintf(&b, "| metrics per wall second | %.0f |\n", r.RatePerSec)
	fmt.Fprintf(&b, "| feed errors | %d |\n", r.FeedErrors)
	fmt.Fprintf(&b, "| RSS, mean of the second tenth | %.1f MiB |\n", float64(r.RSSSecondKiB)/1024)
	fmt.Fprintf(&b, "| RSS, mean of the last tenth | %.1f MiB |\n", float64(r.RSSLastKiB)/1024)
	fmt.Fprintf(&b, "| RSS, peak | %.1f MiB |\n", float64(r.RSSPeakKiB)/1024)
	fmt.Fprintf(&b, "| RSS growth (target < %.0f%%) | %+.2f%% **%s** |\n", r.TargetPct, r.GrowthPct, verdict)
	fmt.Fprintf(&b, "| Go heap in use, second / last tenth | %.1f / %.1f MiB (%+.2f%%) |\n",
		float64(r.HeapSecondKiB)/1024, float64(r.HeapLastKiB)/1024, r.HeapGrowthPct)
	fmt.Fprintf(&b, "| RSS by tenth, MiB | %s |\n", tenths(r.Samples, func(s sample) int64 { return s.RSSKiB }))
	fmt.Fprintf(&b, "| RSS anonymous by tenth, MiB | %s |\n", tenths(r.Samples, func(s sample) int64 { return s.AnonKiB }))
	fmt.Fprintf(&b, "| RSS file-backed by tenth, MiB | %s |\n", tenths(r.Samples, func(s sample) int64 { return s.FileKiB }))
	fmt.Fprintf(&b, "| Go heap in use by tenth, MiB | %s |\n", tenths(r.Heap, func(h heapSample) int64 { return h.HeapInUseKiB }))
	fmt.Fprintf(&b, "| Go heap held from the system by tenth, MiB | %s |\n", tenths(r.Heap, func(h heapSample) int64 { return h.HeapMappedKiB }))
	fmt.Fprintf(&b, "| Go runtime's memory held from the system by tenth, MiB | %s |\n", tenths(r.Heap, func(h heapSample) int64 { return h.RuntimeKiB }))
	for _, k := range []string{"trips", "metrics_changed", "tags_converted", "keys_tracked", "keys_tripped", "memory_bytes", "keys_evicted"} {
		fmt.Fprintf(&b, "| guard %s | %d |\n", k, r.Guard[k])
	}
	fmt.Fprintf(&b, "\nThe plot (churn-soak.png): the agent's RSS in MiB (blue) and its Go heap in use (green, which swings with each garbage collection) against simulated hours; the second and the last tenth, whose means are compared, are shaded; the grey line is the metrics delivered, scaled to the plot's height.\n")
	return b.String()
}
