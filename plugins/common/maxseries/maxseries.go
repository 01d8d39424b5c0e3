// Package maxseries holds the max_series option of morse's aggregators, which Telegraf's
// do not have: an aggregator embeds Bound, so that max_series sits in its own table, and
// reports through it the metrics it refused because the bound was reached.
//
// It lives under plugins/common rather than internal/ because aggregator structs embed it
// and so export it.
package maxseries

import (
	"log/slog"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/selfstat"
)

// Bound is an aggregator's max_series option, embedded in its config, and what reports the
// metrics it refuses: a counter (series_refused) and a log line at most every five minutes.
// Telegraf's aggregators keep every series they see; morse's keep at most MaxSeries, so that
// a tag that never stops changing cannot grow the agent's memory without bound.
type Bound struct {
	MaxSeries int `toml:"max_series"`

	log     *slog.Logger
	th      *throttle.Throttle
	refused *selfstat.Counter
}

// Default is the default of max_series.
const Default = 100_000

// DefaultBound returns a Bound of Default series.
func DefaultBound() Bound { return Bound{MaxSeries: Default} }

// Validate checks max_series.
func (b *Bound) Validate() error {
	if b.MaxSeries < 1 {
		return morse.Errorf("max_series", "must be at least 1, got %d", b.MaxSeries)
	}
	return nil
}

// SetLogger gives the aggregator the engine's logger.
func (b *Bound) SetLogger(l *slog.Logger) { b.log = l }

// Logger is the logger SetLogger gave, or slog's default before it is called.
func (b *Bound) Logger() *slog.Logger {
	if b.log == nil {
		return slog.Default()
	}
	return b.log
}

// SetStats gives the aggregator its series_refused counter.
func (b *Bound) SetStats(s *selfstat.PluginStats) { b.refused = s.Counter("series_refused") }

// Report counts and logs the metrics that a table refused in the period that ends.
func (b *Bound) Report(name string, n int64) {
	if n == 0 {
		return
	}
	if b.refused != nil {
		b.refused.Add(n)
	}
	if b.th == nil {
		b.th = throttle.New(5 * time.Minute)
	}
	b.th.Log(b.Logger(), slog.LevelWarn, name+": max_series reached; metrics of further series were not aggregated in this period",
		"max_series", b.MaxSeries, "metrics", n)
}
