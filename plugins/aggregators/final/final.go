// Package final is the final aggregator: it reports the last metric of each series, once the
// series has gone quiet or every period, with Telegraf's aggregators.final options and
// behaviour.
package final

import (
	_ "embed"
	"errors"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/aggregators/internal/series"
	"github.com/morse-agent/morse/plugins/common/maxseries"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Report the final metric of a series"

func init() {
	morse.RegisterAggregator(morse.AggregatorInfo{
		Name:         "final",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Aggregator { return New() },
	})
}

// The output strategies.
const (
	StrategyTimeout  = "timeout"
	StrategyPeriodic = "periodic"
)

// Final remembers the last metric of each series across periods, until it pushes it. Its
// metrics keep their own timestamps, which the engine must not round to its precision
// (Telegraf sets nanosecond precision for them).
type Final struct {
	OutputStrategy         string         `toml:"output_strategy"`
	SeriesTimeout          morse.Duration `toml:"series_timeout"`
	KeepOriginalFieldNames bool           `toml:"keep_original_field_names"`
	// Bound is max_series, the most series kept in a period, and its refusal report.
	maxseries.Bound

	// Now is the clock; nil means time.Now. Tests set it to make time deterministic.
	Now func() time.Time `toml:"-"`

	table *series.Table[morse.Metric]
}

// New returns the aggregator with Telegraf's defaults.
func New() *Final {
	return &Final{SeriesTimeout: morse.Duration(5 * time.Minute), Bound: maxseries.DefaultBound()}
}

// Validate checks the options.
func (f *Final) Validate() error {
	errs := []error{f.Bound.Validate()}
	switch f.OutputStrategy {
	case "":
		f.OutputStrategy = StrategyTimeout
	case StrategyTimeout, StrategyPeriodic:
	default:
		errs = append(errs, morse.Errorf("output_strategy", "must be %q or %q, got %q", StrategyTimeout, StrategyPeriodic, f.OutputStrategy))
	}
	if f.SeriesTimeout < 0 {
		errs = append(errs, morse.Errorf("series_timeout", "must not be negative"))
	}
	return errors.Join(errs...)
}

// Init prepares the aggregator.
func (f *Final) Init() error {
	if err := f.Validate(); err != nil {
		return err
	}
	if f.Now == nil {
		f.Now = time.Now
	}
	f.table = series.New[morse.Metric](f.MaxSeries, false)
	return nil
}

// Add remembers m as the last metric of its series.
func (f *Final) Add(m morse.Metric) {
	m = m.Expanded()
	if e, _ := f.table.Get(m); e != nil {
		e.State = m
	}
}

// Push adds the final metric of every series that is final: with the timeout strategy, of
// those whose last metric is older than series_timeout; with periodic, of all. A series
// pushed is forgotten.
func (f *Final) Push(acc morse.Accumulator) {
	now := f.Now()
	timeout := f.OutputStrategy == StrategyTimeout
	f.table.Keep(func(e *series.Entry[morse.Metric]) bool {
		m := e.State
		if timeout && now.Sub(m.Time()) <= time.Duration(f.SeriesTimeout) {
			return true // not final yet
		}
		if !f.KeepOriginalFieldNames {
			fields := make([]morse.Field, len(m.Fields()))
			for i, fl := range m.Fields() {
				fields[i] = morse.Field{Key: fl.Key + "_final", Value: fl.Value}
			}
			m = m.WithFields(fields)
		}
		acc.AddMetric(m)
		return false
	})
	f.Report("final", f.table.Refused())
}

// Reset does nothing: a series stays until its final metric is pushed.
func (f *Final) Reset() {}
