package agent

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse/selfstat"
)

// fedSet records which outputs of one agent state an input's metrics have reached, after
// the processors and the outputs' filters, so that the input waits for room only in
// outputs it feeds: a listener whose metrics an output's namepass rejects is never held
// back by that output's backlog.
type fedSet struct {
	st  *agentState
	fed []atomic.Bool // by index in st.outputs
}

// fedFor returns the input's record for st, starting a new one after a reload. Marks of
// outputs that the reload kept carry over.
func (ri *runningInput) fedFor(st *agentState) *fedSet {
	old := ri.fed.Load()
	if old != nil && old.st == st {
		return old
	}
	fs := &fedSet{st: st, fed: make([]atomic.Bool, len(st.outputs))}
	if old != nil {
		for i, ro := range st.outputs {
			for j, was := range old.st.outputs {
				if was == ro && old.fed[j].Load() {
					fs.fed[i].Store(true)
				}
			}
		}
	}
	if ri.fed.CompareAndSwap(old, fs) {
		return fs
	}
	return ri.fedFor(st) // another goroutine of the input got there first
}

// mark records that output i took a metric. Once set, it is only read, so the shared cache
// line is not written on every metric.
func (fs *fedSet) mark(i int) {
	if !fs.fed[i].Load() {
		fs.fed[i].Store(true)
	}
}

// flowStats are an input's backpressure counters, internal_listener: created when it is first
// held back, so inputs that never push back have none.
type flowStats struct {
	once        sync.Once
	series      *selfstat.Series
	waits, wait *selfstat.Counter
}

// WaitForRoom implements morse.RoomWaiter: it waits while an output that this input feeds
// keeps up with its sink and holds a backlog above its high-water mark. Under --test, where
// metrics go to a printer, it never waits.
func (acc *accumulator) WaitForRoom(ctx context.Context) error {
	if !acc.toOutputs {
		return nil
	}
	ri := acc.in
	st := ri.agent.state.Load()
	fs := ri.fedFor(st)
	held := false
	for i, ro := range st.outputs {
		if fs.fed[i].Load() && ro.w.HoldsBack() {
			held = true
			break
		}
	}
	if !held {
		return nil
	}
	start := time.Now()
	defer func() { ri.countWait(time.Since(start)) }()
	for i, ro := range st.outputs {
		if fs.fed[i].Load() {
			if err := ro.w.WaitForRoom(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// WaitForDisk implements morse.DiskWaiter: it waits while an output that this input feeds
// holds metrics in memory because its disk buffer's disk refused them. The wait is counted
// as a wait for room.
func (acc *accumulator) WaitForDisk(ctx context.Context) error {
	if !acc.toOutputs {
		return nil
	}
	ri := acc.in
	st := ri.agent.state.Load()
	fs := ri.fedFor(st)
	var start time.Time
	for i, ro := range st.outputs {
		if !fs.fed[i].Load() || !ro.w.HoldsInMemory() {
			continue
		}
		if start.IsZero() {
			start = time.Now()
			defer func() { ri.countWait(time.Since(start)) }()
		}
		if err := ro.w.WaitForDisk(ctx); err != nil {
			return err
		}
	}
	return nil
}

// countWait counts one wait for room and its length.
func (ri *runningInput) countWait(d time.Duration) {
	f := &ri.flow
	f.once.Do(func() {
		f.series = ri.agent.stats.NewSeries("internal_listener", maps.Clone(ri.selfTags))
		f.waits, f.wait = f.series.Counter("backpressure_waits"), f.series.Counter("backpressure_wait_ns")
	})
	if f.series == nil {
		return // the input was removed by a reload
	}
	f.waits.Incr()
	f.wait.Add(int64(d))
}

// removeStats takes the input's self-metrics out of the registry, for an input that a
// reload took away.
func (ri *runningInput) removeStats() {
	ri.agent.stats.Remove(ri.series)
	if ri.pluginStats != nil {
		ri.pluginStats.Remove()
	}
	ri.flow.once.Do(func() {}) // no series may be created after this
	if ri.flow.series != nil {
		ri.agent.stats.Remove(ri.flow.series)
	}
}
