package cardinality

import (
	"log/slog"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/morse-agent/morse"
)

// Apply passes the metrics of in through the guard, reusing in's backing array. On the
// steady path (keys that are not acted on, values already seen in the current slot) it takes
// one lock per call and allocates nothing. A metric held as line-protocol text is read
// without expanding it, and stays text unless the action changes it.
func (g *Guard) Apply(in []morse.Metric) []morse.Metric {
	now := g.clock()
	g.mu.Lock()
	epoch := floorDiv(now, g.slotWidth)
	if epoch != g.epoch {
		g.t.seen.forgetAll() // every series' values must be counted in the new slot
	}
	g.nowNano, g.epoch = now, epoch
	evicted := 0
	// Metrics are large values: each is read in place, and written back only when it
	// changed or an earlier one was dropped, so the steady path copies none.
	n := 0
	for i := range in {
		m, changed, keep := g.process(&in[i])
		switch {
		case !keep:
		case changed:
			in[n] = m
			n++
		default:
			if n != i {
				in[n] = in[i]
			}
			n++
		}
		if g.t.overBudget() {
			evicted += g.t.evict()
		}
	}
	out := in[:n]
	if evicted > 0 {
		g.stats.evicted.Add(int64(evicted))
	}
	g.stats.setGauges(g.t)
	var events []event
	if len(g.events) > 0 {
		events = slices.Clone(g.events)
		g.events = g.events[:0]
	}
	g.mu.Unlock()
	for _, ev := range events {
		g.logEvent(ev)
	}
	if evicted > 0 {
		g.evictLog.Log(g.log, slog.LevelWarn, "cardinality: max_memory reached; forgot the tag keys seen longest ago",
			"max_memory", int64(g.MaxMemory), "forgotten", evicted)
	}
	return out
}

// floorDiv divides rounding down, so that times before 1970 fall in the right slot too.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// process observes every tag of *m and applies the action if a key calls for it. It returns
// the changed metric and true when the action changed it, and whether to keep it.
func (g *Guard) process(m *morse.Metric) (out morse.Metric, changed, keep bool) {
	if lt, ok := m.Line(); ok {
		h, cacheable := seriesKey(lt.Text)
		if cacheable && g.t.seen.seen(h) {
			return out, false, true
		}
		if !g.observeLine(lt) {
			if cacheable {
				g.t.seen.remember(h)
			}
			return out, false, true
		}
		if g.Action == ActionDropMetric {
			g.stats.dropped.Incr()
			return out, false, false // no need to expand what goes
		}
		e := m.Expanded()
		out, keep = g.act(e, g.t.measurement(e.Name()))
		return out, true, keep
	}
	ms := g.t.measurement(m.Name())
	acting := false
	tags := m.Tags()
	for i := range tags {
		ks := g.t.recentKey(ms, i, tags[i].Key)
		if act, settled := g.settled(ks); settled {
			acting = acting || act
			continue
		}
		if g.observe(ks, tags[i].Value, false) {
			acting = true
		}
	}
	switch {
	case !acting:
		return out, false, true
	case g.Action == ActionDropMetric:
		g.stats.dropped.Incr()
		return out, false, false
	}
	out, keep = g.act(*m, ms)
	return out, true, keep
}

// settled reports whether the guard's decision on ks is made whatever its values are, and
// what it is, so that the caller need not hash the value: an exempt key is never acted
// on, a forced one always, and a tripped one stays tripped when reset_after is off (its
// count would only ever be logged).
func (g *Guard) settled(ks *keyState) (acting, settled bool) {
	switch {
	case ks.mode == modeAllow:
		ks.used = true
		return false, true
	case ks.mode == modeDeny, ks.tripped && g.ResetAfter == 0:
		ks.used = true
		return true, true
	}
	return false, false
}

// observe counts a value of key ks, escaped if it holds a line-protocol escape, and
// reports whether the action applies to the key. The caller has checked that the key is
// not settled.
func (g *Guard) observe(ks *keyState, value string, escaped bool) bool {
	ks.used = true
	w := &ks.win
	if w.epoch < g.epoch {
		g.t.charge(ks, -w.advance(g.epoch))
		ks.lastLen = noLast
		g.rotated(ks)
	}
	// Many keys keep their value from one metric of a measurement to the next (a region,
	// the agent's host): their value then is the slot's last, and needs neither hashing
	// nor a register read. The last value is kept in the key's state rather than as a
	// string, which would keep the text it was sliced from alive.
	if !escaped && int(ks.lastLen) == len(value) && string(ks.lastVal[:len(value)]) == value {
		return g.keepTripped(ks)
	}
	var h uint64
	if escaped {
		h, ks.lastLen = hashEscaped(value), noLast
	} else {
		h = xxhash.Sum64String(value)
		ks.lastLen = noLast
		if len(value) <= len(ks.lastVal) {
			ks.lastLen = uint8(copy(ks.lastVal[:], value))
		}
	}
	grew, bytes := w.add(h)
	if bytes != 0 {
		g.t.charge(ks, bytes)
	}
	if grew {
		g.grew(ks)
	}
	return g.keepTripped(ks)
}

// keepTripped untrips a tripped key that has been calm for reset_after, and reports
// whether the key is still tripped. It is inlined: most keys are not tripped.
func (g *Guard) keepTripped(ks *keyState) bool {
	if ks.tripped && ks.calmSince != 0 && g.ResetAfter > 0 {
		g.resetIfCalm(ks)
	}
	return ks.tripped
}

// resetIfCalm untrips ks once it has been calm for reset_after.
func (g *Guard) resetIfCalm(ks *keyState) {
	if g.nowNano-ks.calmSince >= int64(g.ResetAfter) {
		g.t.untrip(ks)
		g.stats.resets.Incr()
		g.events = append(g.events, event{kind: evReset, measurement: ks.meas.name, key: ks.key, estimate: ks.win.estimate()})
	}
}

// over reports whether an estimate passes max_values. Rounding first keeps linear
// counting's slight excess for small numbers (3.001 for 3 values) from tripping a key early.
func (g *Guard) over(estimate float64) bool { return int64(estimate+0.5) > int64(g.MaxValues) }

// grew handles a rise of the estimate: a key passing max_values trips, and a tripped key
// above it is no longer calm.
func (g *Guard) grew(ks *keyState) {
	est := ks.win.estimate()
	if !g.over(est) {
		return
	}
	if ks.tripped {
		ks.calmSince = 0
		return
	}
	g.t.trip(ks)
	g.stats.trips.Incr()
	g.events = append(g.events, event{kind: evTrip, measurement: ks.meas.name, key: ks.key, estimate: est})
}

// rotated handles the fall of the estimate when old slots leave the window: a tripped key
// under max_values starts being calm.
func (g *Guard) rotated(ks *keyState) {
	if !ks.tripped {
		return
	}
	switch {
	case g.over(ks.win.estimate()):
		ks.calmSince = 0
	case ks.calmSince == 0:
		ks.calmSince = g.nowNano
	}
}

// act applies the action field or drop_tag to the tags of m whose keys call for it (process
// drops the metrics that drop_metric is for). A converted tag becomes a
// string field named after its key; if the metric has a field of that name, the existing
// field is kept and the value goes to "<key>_tag"; if that is taken too, the tag is dropped
// and the conflict counted.
func (g *Guard) act(m morse.Metric, ms *measurement) (morse.Metric, bool) {
	tags := m.Tags()
	var kept keptTags
	var fields []morse.Field
	for i, tag := range tags {
		ks := g.t.recentKey(ms, i, tag.Key)
		ks.used = true
		if !ks.tripped && ks.mode != modeDeny {
			kept.keep(tags, i)
			continue
		}
		if g.Action == ActionDropTag {
			g.stats.tagsDropped.Incr()
			continue
		}
		if fields == nil {
			fields = slices.Clip(m.Fields())
		}
		name, ok := freeField(fields, tag.Key)
		if !ok {
			g.stats.conflicts.Incr()
			g.stats.tagsDropped.Incr()
			g.conflicts.Log(g.log, slog.LevelWarn, "cardinality: cannot turn the tag into a field, the field name and <key>_tag are taken; dropped the tag",
				"measurement", ms.name, "key", tag.Key)
			continue
		}
		if name != tag.Key {
			g.stats.conflicts.Incr()
		}
		fields = append(fields, morse.Field{Key: name, Value: morse.String(tag.Value)})
		g.stats.converted.Incr()
	}
	g.stats.changed.Incr()
	m = m.WithSortedTags(kept.slice(tags))
	if fields != nil {
		m = m.WithFields(fields)
	}
	return m, true
}

// keptTags collects the tags a metric keeps. While they are a run of the original tags (a
// high-cardinality key is usually one, at either end) they stay a window on the metric's
// own slice, clipped so that nothing appends into it; only a gap makes a copy. A converted
// metric then costs one allocation, its new fields, not two.
type keptTags struct {
	lo, hi int         // the window tags[lo:hi], while own is nil
	own    []morse.Tag // the copy, once the kept tags are not a run
}

func (k *keptTags) keep(tags []morse.Tag, i int) {
	switch {
	case k.own != nil:
		k.own = append(k.own, tags[i])
	case k.hi == 0:
		k.lo, k.hi = i, i+1
	case k.hi == i:
		k.hi++
	default:
		k.own = append(make([]morse.Tag, 0, len(tags)-1), tags[k.lo:k.hi]...)
		k.own = append(k.own, tags[i])
	}
}

func (k *keptTags) slice(tags []morse.Tag) []morse.Tag {
	if k.own != nil {
		return k.own
	}
	if k.hi == 0 {
		return nil
	}
	return tags[k.lo:k.hi:k.hi]
}

// freeField returns the field name for a converted tag: the key, or "<key>_tag" when the key
// is taken; false when both are.
func freeField(fields []morse.Field, key string) (string, bool) {
	taken := func(name string) bool {
		return slices.ContainsFunc(fields, func(f morse.Field) bool { return f.Key == name })
	}
	if !taken(key) {
		return key, true
	}
	if alt := key + "_tag"; !taken(alt) {
		return alt, true
	}
	return "", false
}
