package mysql

import (
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
)

// discard counts what it is given and keeps nothing, so that a benchmark measures the
// gather, not the accumulator.
type discard struct{ metrics, errors atomic.Int64 }

func (d *discard) AddMetric(morse.Metric) { d.metrics.Add(1) }
func (d *discard) AddFields(string, map[string]any, map[string]string, ...time.Time) {
	d.metrics.Add(1)
}
func (d *discard) AddError(error) { d.errors.Add(1) }
