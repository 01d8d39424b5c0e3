package agent

import (
	"sync/atomic"

	"github.com/morse-agent/morse"
)

// WithTracking implements morse.DeliveryTracking: the input's metrics added as groups are
// reported on Delivered once every output that took them has written or dropped them.
func (acc *accumulator) WithTracking(maxTracked int) morse.TrackingAccumulator {
	return &trackingAccumulator{accumulator: acc, delivered: make(chan morse.DeliveryInfo, max(maxTracked, 1))}
}

// trackingAccumulator adds groups the way AddMetrics adds a batch, each group holding a
// reference of its own while it is handed out: so a group that the filters, the processors
// or the aggregators take entirely, or that no output selects, is done at once, and one
// that the outputs took is done when the last of them settles its last metric
// (morse.RetainTracked and SettleTracked, which batch.Writer calls).
type trackingAccumulator struct {
	*accumulator
	delivered chan morse.DeliveryInfo
	lastID    atomic.Uint64
}

// AddTrackingMetricGroup implements morse.TrackingAccumulator.
func (t *trackingAccumulator) AddTrackingMetricGroup(group []morse.Metric) morse.TrackingID {
	g := morse.NewTrackingGroup(morse.TrackingID(t.lastID.Add(1)), t.notify)
	g.Track(group)
	if len(group) > 0 {
		t.AddMetrics(group)
	}
	g.Done()
	return g.ID()
}

// Delivered implements morse.TrackingAccumulator.
func (t *trackingAccumulator) Delivered() <-chan morse.DeliveryInfo { return t.delivered }

// notify reports a group done. It may block the output that settled the group's last
// metric, but only for an input that keeps more groups outstanding than it said it would.
func (t *trackingAccumulator) notify(d morse.DeliveryInfo) { t.delivered <- d }
