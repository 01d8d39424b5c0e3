package morse

import "sync/atomic"

// TrackingID identifies a group of metrics that an input added with
// TrackingAccumulator.AddTrackingMetricGroup.
type TrackingID uint64

// DeliveryInfo tells a tracking input that a group of its metrics is done: every output
// that took any of them has written them or dropped them for good, and every metric the
// processors, the aggregators or the output filters took out of the way is done too.
type DeliveryInfo struct {
	ID TrackingID
	// Delivered is false when an output dropped one of the group's metrics: refused it
	// for good, evicted it from a full buffer, or gave up on it at shutdown. As in
	// Telegraf, the group is done either way; the input decides what a drop means to it.
	Delivered bool
}

// TrackingAccumulator is the accumulator of an input that must know when what it added has
// reached the outputs, such as a queue consumer that acknowledges a message only then.
// It is Telegraf's model.
type TrackingAccumulator interface {
	Accumulator
	// AddTrackingMetricGroup adds the metrics of one group, such as the metrics of one
	// message. The accumulator owns group afterwards. Delivered reports the group once it
	// is done, also when group is empty or every metric is filtered out.
	AddTrackingMetricGroup(group []Metric) TrackingID
	// Delivered receives one DeliveryInfo per group. Its capacity is the maxTracked given
	// to WithTracking: an input that keeps fewer groups than that outstanding is never
	// the reason an output waits to report one.
	Delivered() <-chan DeliveryInfo
}

// DeliveryTracking is implemented by the accumulators that the agent gives to service
// inputs. WithTracking returns a TrackingAccumulator whose Delivered channel holds
// maxTracked reports; the input must keep at most that many groups outstanding.
type DeliveryTracking interface {
	WithTracking(maxTracked int) TrackingAccumulator
}

// TrackingGroup counts the references to one group of tracked metrics: one per metric held
// by an output, and one that the accumulator holds while it hands the group out, so that the
// group cannot be reported done before every output had its chance to take it. When the
// count falls to zero the group reports itself, once.
type TrackingGroup struct {
	// plain and uints are what the group's metrics point at (Metric.aux): the second for
	// line metrics whose text has unsigned integer fields.
	plain, uints metricAux

	refs     atomic.Int64
	dropped  atomic.Bool
	id       TrackingID
	onDone   func(DeliveryInfo)
	released atomic.Bool
}

// NewTrackingGroup returns a group holding the accumulator's reference. Done releases it;
// onDone is called once, from the goroutine that releases the last reference.
func NewTrackingGroup(id TrackingID, onDone func(DeliveryInfo)) *TrackingGroup {
	g := &TrackingGroup{id: id, onDone: onDone}
	g.plain, g.uints = metricAux{group: g}, metricAux{group: g, uints: true}
	g.refs.Store(1)
	return g
}

// metricAux is what a Metric's one auxiliary word points at.
type metricAux struct {
	group *TrackingGroup
	uints bool // a line metric's text has unsigned integer fields
}

// auxUints is the aux of an untracked line metric with unsigned integer fields.
var auxUints = metricAux{uints: true}

// group is m's tracking group, nil when m is not tracked.
func (m Metric) group() *TrackingGroup {
	if m.aux == nil {
		return nil
	}
	return m.aux.group
}

// ID is the group's id.
func (g *TrackingGroup) ID() TrackingID { return g.id }

// Track marks every metric of ms, in place, as a member of g.
func (g *TrackingGroup) Track(ms []Metric) {
	for i := range ms {
		if ms[i].aux != nil && ms[i].aux.uints {
			ms[i].aux = &g.uints
		} else {
			ms[i].aux = &g.plain
		}
	}
}

// Done releases the accumulator's reference, once it has handed the group to the outputs.
func (g *TrackingGroup) Done() {
	if g.released.CompareAndSwap(false, true) {
		g.release(true)
	}
}

// retain takes a reference unless the group is already done, which it can be for a metric
// that a processor or an aggregator kept from an earlier call and passes on late.
func (g *TrackingGroup) retain() bool {
	for {
		n := g.refs.Load()
		if n <= 0 {
			return false
		}
		if g.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (g *TrackingGroup) release(delivered bool) {
	if !delivered {
		g.dropped.Store(true)
	}
	if g.refs.Add(-1) == 0 && g.onDone != nil {
		g.onDone(DeliveryInfo{ID: g.id, Delivered: !g.dropped.Load()})
	}
}

// Tracked reports whether m belongs to a tracking group (TrackingAccumulator).
func (m Metric) Tracked() bool { return m.aux != nil && m.aux.group != nil }

// Untracked returns m without its tracking group, for a copy that must not count.
func (m Metric) Untracked() Metric {
	switch {
	case m.aux == nil || m.aux.group == nil:
	case m.aux.uints:
		m.aux = &auxUints
	default:
		m.aux = nil
	}
	return m
}

// RetainTracked takes one reference on the group of every tracked metric of ms, for a
// holder such as an output's writer (batch.Writer.WriteBatch) that calls it once as it
// takes ms, and settles each metric once with SettleTracked as it lets it go. A metric
// whose group is already done is untracked in place, and counts no more. It reports how
// many metrics of ms are tracked afterwards; a batch with none, a listener's, costs one
// scan.
func RetainTracked(ms []Metric) int {
	n := 0
	for i := range ms {
		g := ms[i].group()
		if g == nil {
			continue
		}
		if !g.retain() {
			ms[i] = ms[i].Untracked()
			continue
		}
		n++
	}
	return n
}

// SettleTracked releases the reference that RetainTracked took on the group of every
// tracked metric of ms: the holder wrote them (delivered) or dropped them for good.
func SettleTracked(ms []Metric, delivered bool) {
	for i := range ms {
		if g := ms[i].group(); g != nil {
			g.release(delivered)
		}
	}
}
