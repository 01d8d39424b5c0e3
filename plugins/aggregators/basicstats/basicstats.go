// Package basicstats is the basicstats aggregator: count, min, max, mean, variance and more
// of every numeric field of every series, per period, with Telegraf's aggregators.basicstats
// options and behaviour.
package basicstats

import (
	_ "embed"
	"errors"
	"math"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/aggregators/internal/series"
	"github.com/morse-agent/morse/plugins/common/maxseries"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Keep the aggregate basicstats of each metric passing through"

func init() {
	morse.RegisterAggregator(morse.AggregatorInfo{
		Name:         "basicstats",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Aggregator { return New() },
	})
}

// BasicStats aggregates the numeric fields of each series. It pushes its metrics without a
// timestamp, so that the engine stamps them with the time of the push, as Telegraf does.
type BasicStats struct {
	Stats []string `toml:"stats"`
	// Bound is max_series, the most series kept in a period, and its refusal report.
	maxseries.Bound

	enabled map[string]bool
	table   *series.Table[[]stats]
}

// stats are the running figures of one field.
type stats struct {
	key                        string
	count, min, max, sum, mean float64
	m2                         float64 // Welford's sum of squared differences from the mean
	first, last, diff, rate    float64
	interval                   time.Duration
	firstTime                  time.Time
}

// New returns the aggregator with its defaults.
func New() *BasicStats { return &BasicStats{Bound: maxseries.DefaultBound()} }

var (
	known        = []string{"count", "min", "max", "mean", "s2", "stdev", "sum", "diff", "non_negative_diff", "rate", "non_negative_rate", "percent_change", "interval", "last", "first"}
	defaultStats = []string{"count", "min", "max", "mean", "s2", "stdev"}
)

// Validate checks the stats. Telegraf warns about an unknown one and ignores it; here it is
// an error, so that a typo does not lose a stat silently. The exception is "variance", which
// Telegraf's own sample lists although its name for the variance is "s2": as there, it is
// ignored, with one warning at start (Init), so that a config copied from the sample loads.
func (b *BasicStats) Validate() error {
	errs := []error{b.Bound.Validate()}
	names := b.Stats
	if names == nil {
		names = defaultStats
	}
	b.enabled = map[string]bool{}
	for _, n := range names {
		switch {
		case n == "variance":
			continue
		case !contains(known, n):
			errs = append(errs, morse.Errorf("stats", "unknown stat %q; known are %v", n, known))
		}
		b.enabled[n] = true
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Init prepares the aggregator.
func (b *BasicStats) Init() error {
	if b.enabled == nil {
		if err := b.Validate(); err != nil {
			return err
		}
	}
	b.table = series.New[[]stats](b.MaxSeries, false)
	if contains(b.Stats, "variance") {
		b.Logger().Warn(`stats: "variance" is not a stat and is ignored, as in Telegraf; the variance is "s2"`)
	}
	return nil
}

// Add takes a metric into the period.
func (b *BasicStats) Add(m morse.Metric) {
	m = m.Expanded()
	e, _ := b.table.Get(m)
	if e == nil {
		return
	}
	for _, f := range m.Fields() {
		x, ok := series.Number(f.Value)
		if !ok {
			continue
		}
		i := index(e.State, f.Key)
		if i < 0 {
			e.State = append(e.State, stats{key: f.Key, count: 1, min: x, max: x, sum: x, mean: x,
				first: x, last: x, firstTime: m.Time()})
			continue
		}
		e.State[i].add(x, m.Time())
	}
}

func index(s []stats, key string) int {
	for i := range s {
		if s[i].key == key {
			return i
		}
	}
	return -1
}

// add updates the figures with Welford's algorithm. diff, rate and interval are measured
// from the field's first value of the period, as Telegraf measures them.
func (s *stats) add(x float64, t time.Time) {
	s.count++
	delta := x - s.mean
	s.mean += delta / s.count
	s.m2 += delta * (x - s.mean)
	if x < s.min {
		s.min = x
	} else if x > s.max {
		s.max = x
	}
	s.sum += x
	s.diff = x - s.first
	s.interval = t.Sub(s.firstTime)
	if !t.Equal(s.firstTime) {
		s.rate = s.diff / s.interval.Seconds()
	}
	s.last = x
}

// Push adds one metric per series with the enabled stats of each field.
func (b *BasicStats) Push(acc morse.Accumulator) {
	for _, e := range b.table.Entries() {
		fields := map[string]any{}
		for i := range e.State {
			b.fields(fields, &e.State[i])
		}
		if len(fields) == 0 {
			continue
		}
		acc.AddFields(e.Name, fields, e.TagMap())
	}
	b.Report("basicstats", b.table.Refused())
}

func (b *BasicStats) fields(out map[string]any, s *stats) {
	on := b.enabled
	put := func(stat string, v any) {
		if on[stat] {
			out[s.key+"_"+stat] = v
		}
	}
	put("count", s.count)
	put("min", s.min)
	put("max", s.max)
	put("mean", s.mean)
	put("sum", s.sum)
	put("last", s.last)
	put("first", s.first)
	if s.count < 2 {
		return // a variance of one value is undefined, and so are the differences
	}
	variance := s.m2 / (s.count - 1)
	put("s2", variance)
	put("stdev", math.Sqrt(variance))
	put("diff", s.diff)
	put("rate", s.rate)
	put("percent_change", s.diff/s.first*100)
	put("interval", s.interval.Nanoseconds())
	if s.diff >= 0 {
		put("non_negative_diff", s.diff)
		put("non_negative_rate", s.rate)
	}
}

// Reset starts a new period.
func (b *BasicStats) Reset() { b.table.Reset() }
