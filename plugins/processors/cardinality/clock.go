package cardinality

import "time"

// The guard reads the time once per Apply call, for its slot and for reset_after. On the
// steady path of a metric handed over alone (a polled input's AddMetric), reading the system
// clock was a sixth to a third of the cost on the VMs it was measured on. The agent offers a
// coarse clock that one goroutine of its own sets every tick (internal/coarseclock), which
// costs a load. The guard takes it when a tick is at most a sixteenth of a slot, so that
// slots and reset_after move by no more than that.
const coarseClockPerSlot = 16

// SetCoarseClock gives the guard a clock that may lag the system's by up to resolution, and
// costs less to read. The agent calls it before the first Apply (morse.CoarseClockSetter).
// The guard uses it unless Now is set or its slots (window/4) are shorter than 16 ticks.
func (g *Guard) SetCoarseClock(now func() time.Time, resolution time.Duration) {
	g.coarse, g.coarseRes = now, resolution
	if g.slotWidth > 0 { // after Init
		g.clock = g.pickClock()
	}
}

// pickClock returns the guard's clock, in Unix ns: Now when set, else the coarse clock when
// it is fine enough for the slots, else the system's monotonic clock. The monotonic clock
// makes slots immune to the wall clock being set; time.Since reads only it, which costs
// half of what time.Now costs.
func (g *Guard) pickClock() func() int64 {
	switch now, coarse := g.Now, g.coarse; {
	case now != nil:
		return func() int64 { return now().UnixNano() }
	case coarse != nil && int64(g.coarseRes)*coarseClockPerSlot <= g.slotWidth:
		return func() int64 { return coarse().UnixNano() }
	}
	base := time.Now()
	baseNano := base.UnixNano()
	return func() int64 { return baseNano + int64(time.Since(base)) }
}
