// Package minmax is the minmax aggregator: the least and the greatest value of every
// numeric field of every series, per period, with Telegraf's aggregators.minmax behaviour.
package minmax

import (
	_ "embed"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/aggregators/internal/series"
	"github.com/morse-agent/morse/plugins/common/maxseries"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Keep the aggregate min/max of each metric passing through"

func init() {
	morse.RegisterAggregator(morse.AggregatorInfo{
		Name:         "minmax",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Aggregator { return New() },
	})
}

// MinMax aggregates the numeric fields of each series. It pushes its metrics without a
// timestamp, so that the engine stamps them with the time of the push, as Telegraf does.
type MinMax struct {
	// Bound is max_series, the most series kept in a period, and its refusal report.
	maxseries.Bound

	table *series.Table[[]minmax]
}

type minmax struct {
	key      string
	min, max float64
}

// New returns the aggregator with its defaults.
func New() *MinMax { return &MinMax{Bound: maxseries.DefaultBound()} }

// Init prepares the aggregator.
func (a *MinMax) Init() error {
	if err := a.Validate(); err != nil {
		return err
	}
	a.table = series.New[[]minmax](a.MaxSeries, false)
	return nil
}

// Add takes a metric into the period. Only numeric fields count.
func (a *MinMax) Add(m morse.Metric) {
	m = m.Expanded()
	e, _ := a.table.Get(m)
	if e == nil {
		return
	}
fields:
	for _, f := range m.Fields() {
		x, ok := series.Number(f.Value)
		if !ok {
			continue
		}
		for i := range e.State {
			if s := &e.State[i]; s.key == f.Key {
				if x < s.min {
					s.min = x
				} else if x > s.max {
					s.max = x
				}
				continue fields
			}
		}
		e.State = append(e.State, minmax{key: f.Key, min: x, max: x})
	}
}

// Push adds one metric per series with <field>_min and <field>_max.
func (a *MinMax) Push(acc morse.Accumulator) {
	for _, e := range a.table.Entries() {
		if len(e.State) == 0 {
			continue // Telegraf would push a metric without fields, which no output can write
		}
		fields := make(map[string]any, 2*len(e.State))
		for _, s := range e.State {
			fields[s.key+"_min"] = s.min
			fields[s.key+"_max"] = s.max
		}
		acc.AddFields(e.Name, fields, e.TagMap())
	}
	a.Report("minmax", a.table.Refused())
}

// Reset starts a new period.
func (a *MinMax) Reset() { a.table.Reset() }
