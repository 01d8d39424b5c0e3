// Package merge is the merge aggregator: it merges the metrics of one series and timestamp
// into one metric with all their fields, with Telegraf's aggregators.merge options and
// behaviour.
package merge

import (
	_ "embed"
	"errors"
	"slices"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/aggregators/internal/series"
	"github.com/morse-agent/morse/plugins/common/maxseries"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Merge metrics into multifield metrics by series key"

func init() {
	morse.RegisterAggregator(morse.AggregatorInfo{
		Name:         "merge",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Aggregator { return New() },
	})
}

// Merge groups metrics by series and timestamp. Its metrics keep their own timestamps,
// which the engine must not round to its precision (Telegraf sets nanosecond precision for
// them); it is usually run with drop_original = true.
type Merge struct {
	RoundTimestamp morse.Duration `toml:"round_timestamp_to"`
	// Bound is max_series, the most series kept in a period, and its refusal report.
	maxseries.Bound

	table *series.Table[[]morse.Field]
}

// New returns the aggregator with its defaults.
func New() *Merge { return &Merge{Bound: maxseries.DefaultBound()} }

// Validate checks the options.
func (a *Merge) Validate() error {
	errs := []error{a.Bound.Validate()}
	if a.RoundTimestamp < 0 {
		errs = append(errs, morse.Errorf("round_timestamp_to", "must not be negative"))
	}
	return errors.Join(errs...)
}

// Init prepares the aggregator.
func (a *Merge) Init() error {
	if err := a.Validate(); err != nil {
		return err
	}
	a.table = series.New[[]morse.Field](a.MaxSeries, true)
	return nil
}

// Add merges m into the metric of its series and (rounded) timestamp. A field that an
// earlier metric had is overwritten in its place; a new one goes last.
func (a *Merge) Add(m morse.Metric) {
	m = m.Expanded()
	if a.RoundTimestamp > 0 {
		m = m.WithTime(m.Time().Round(time.Duration(a.RoundTimestamp)))
	}
	e, isNew := a.table.Get(m)
	switch {
	case e == nil:
		return
	case isNew:
		e.State = slices.Clone(m.Fields())
		return
	}
	for _, f := range m.Fields() {
		if i := slices.IndexFunc(e.State, func(g morse.Field) bool { return g.Key == f.Key }); i >= 0 {
			e.State[i].Value = f.Value
		} else {
			e.State = append(e.State, f)
		}
	}
}

// Push adds the merged metrics in the order their series and timestamps first came.
func (a *Merge) Push(acc morse.Accumulator) {
	for _, e := range a.table.Entries() {
		acc.AddMetric(morse.NewMetric(e.Name, e.Tags, e.State, e.Time))
	}
	a.Report("merge", a.table.Refused())
}

// Reset starts a new period.
func (a *Merge) Reset() { a.table.Reset() }
