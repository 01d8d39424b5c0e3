package cardinality

import (
	"sync/atomic"
	"time"
	"weak"
)

// tickClock is the guard's clock when none is given, as when the agent runs it. Reading the
// system clock in every Apply cost about 37 ns on the test VM, a third of the steady path of
// a metric handed over alone (a polled input's AddMetric), so a timer stores the time once
// per tick and Apply loads it. The guard's times are its slots (a quarter of the window)
// and reset_after: a tick of at most a second, and at most a sixteenth of a slot, moves
// them by no more than that.
//
// The time is the monotonic clock's, counted from the wall time at the start, so that the
// slots do not jump when the wall clock is set.
//
// The timer holds the clock weakly: a guard that the agent lets go of (on a reload, say)
// lets its clock go too, and the timer stops at its next tick. Nothing has to stop it.
type tickClock struct {
	now atomic.Int64 // ns
}

// clockTick returns the tick for slots of slotWidth ns.
func clockTick(slotWidth int64) time.Duration {
	return min(time.Second, time.Duration(slotWidth/16))
}

// startTickClock returns a clock that a timer sets every tick.
func startTickClock(tick time.Duration) *tickClock {
	base := time.Now()
	baseNano := base.UnixNano()
	read := func() int64 { return baseNano + int64(time.Since(base)) }
	c := &tickClock{}
	c.now.Store(read())
	held := weak.Make(c)
	var next func()
	next = func() {
		c := held.Value()
		if c == nil {
			return // the guard is gone
		}
		c.now.Store(read())
		time.AfterFunc(tick, next)
	}
	time.AfterFunc(tick, next)
	return c
}

// Now returns the time of the last tick, in ns.
func (c *tickClock) Now() int64 { return c.now.Load() }
