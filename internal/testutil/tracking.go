package testutil

import (
	"sync/atomic"

	"github.com/morse-agent/morse"
)

// WithTracking implements morse.DeliveryTracking: groups are recorded like any metric and
// reported delivered at once, as if every output had written them, so that a tracking input
// runs in a plugin's own tests without an agent.
func (a *Accumulator) WithTracking(maxTracked int) morse.TrackingAccumulator {
	return &trackingAccumulator{Accumulator: a, delivered: make(chan morse.DeliveryInfo, max(maxTracked, 1))}
}

type trackingAccumulator struct {
	*Accumulator
	delivered chan morse.DeliveryInfo
	lastID    atomic.Uint64
}

// AddTrackingMetricGroup records the group and reports it delivered.
func (t *trackingAccumulator) AddTrackingMetricGroup(group []morse.Metric) morse.TrackingID {
	id := morse.TrackingID(t.lastID.Add(1))
	for _, m := range group {
		t.AddMetric(m.Untracked())
	}
	t.delivered <- morse.DeliveryInfo{ID: id, Delivered: true}
	return id
}

// Delivered implements morse.TrackingAccumulator.
func (t *trackingAccumulator) Delivered() <-chan morse.DeliveryInfo { return t.delivered }
