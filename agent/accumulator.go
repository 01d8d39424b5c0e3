package agent

import (
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

// accumulator is what an input adds to. It applies the input's options and the agent's
// global settings to each metric (process), runs the processing stage, and emits the
// result: to the outputs when running (fanOut, fanOutBatch), to a printer under --test.
type accumulator struct {
	in        *runningInput
	emit      func(morse.Metric)
	toOutputs bool
	service   bool      // the accumulator a service input was started with, not a gather's
	at        time.Time // with time_source, the time every metric gets
}

// forService returns a copy of acc for a service input's Start.
func (acc *accumulator) forService() *accumulator {
	c := *acc
	c.service = true
	return &c
}

func (ri *runningInput) accumulator(emit func(morse.Metric)) *accumulator {
	return &accumulator{in: ri, emit: emit}
}

// outputAccumulator is the accumulator of a running input: it hands metrics to the outputs,
// so line metrics may travel unexpanded to outputs that write them as they are.
func (ri *runningInput) outputAccumulator() *accumulator {
	return &accumulator{in: ri, emit: ri.fanOut, toOutputs: true}
}

// PrefersLines implements LineAccumulator: line metrics pass through when the input leaves
// their names alone and the outputs write most of them as they are.
func (acc *accumulator) PrefersLines() bool {
	return acc.toOutputs && acc.in.keepsLines() && acc.in.agent.state.Load().linesPass
}

// keepsLines reports whether process can handle a line metric without expanding it: the
// input's filter, if any, tests names only, and the name options are unset. The tags it
// adds go into the metric's text (addTags).
func (ri *runningInput) keepsLines() bool {
	c := &ri.cfg.Common
	return ri.cfg.Filter.NamesOnly() &&
		c.NameOverride == "" && c.NamePrefix == "" && c.NameSuffix == ""
}

// AddMetric implements morse.Accumulator.
func (acc *accumulator) AddMetric(m morse.Metric) {
	st := acc.in.agent.state.Load()
	m, ok := acc.process(m, st, acc.precision(st))
	if !ok {
		return
	}
	acc.in.gathered.Incr()
	acc.in.agent.gathered.Incr()
	if st.stage != nil {
		for _, m := range st.stage.run([]morse.Metric{m}) {
			acc.emit(m)
		}
		return
	}
	acc.emit(m)
}

// AddMetrics implements BatchAccumulator.
func (acc *accumulator) AddMetrics(ms []morse.Metric) {
	st := acc.in.agent.state.Load()
	kept := ms[:0]
	precision := acc.precision(st)
	for _, m := range ms {
		if m, ok := acc.process(m, st, precision); ok {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return
	}
	acc.in.gathered.Add(int64(len(kept)))
	acc.in.agent.gathered.Add(int64(len(kept)))
	if st.stage != nil {
		kept = st.stage.run(kept)
	}
	if acc.toOutputs {
		acc.in.fanOutBatch(kept, st)
		return
	}
	for _, m := range kept {
		acc.emit(m)
	}
}

// fanOut hands m to every output. It never blocks: each output's buffer evicts on its own.
// A listener that can push back waits for room before it adds (WaitForRoom).
func (ri *runningInput) fanOut(m morse.Metric) {
	st := ri.agent.state.Load()
	fs := ri.fedFor(st)
	for i, ro := range st.outputs {
		if ro.add(m) {
			fs.mark(i)
		}
	}
}

// fanOutBatch hands ms to every output of st, in one write per output where it can.
func (ri *runningInput) fanOutBatch(ms []morse.Metric, st *agentState) {
	fs := ri.fedFor(st)
	for i, ro := range st.outputs {
		if ro.addBatch(ms) {
			fs.mark(i)
		}
	}
}

// process applies, in Telegraf's order, the input's filter, its name options, its tags and
// the global tags (neither replaces a tag the metric already has), and the precision; then
// time_source's time, which as in Telegraf is not rounded: a gather's start or end. It
// reports false for a metric that the input's filter rejects.
func (acc *accumulator) process(m morse.Metric, st *agentState, precision time.Duration) (morse.Metric, bool) {
	ri := acc.in
	if _, line := m.Line(); line && !ri.keepsLines() {
		m = m.Expanded()
	}
	if ri.cfg.Filter != nil {
		var ok bool
		if m, ok = ri.cfg.Filter.Apply(m); !ok {
			return m, false
		}
	}
	c := &ri.cfg.Common
	if c.NameOverride != "" {
		m = m.WithName(c.NameOverride)
	}
	if c.NamePrefix != "" || c.NameSuffix != "" {
		m = m.WithName(c.NamePrefix + m.Name() + c.NameSuffix)
	}
	m = ri.addTags(m, st)
	if m.Time().IsZero() {
		m = m.WithTime(time.Now())
	}
	if p := precision; p > time.Nanosecond {
		m = m.WithTime(m.Time().Round(p))
	}
	if !acc.at.IsZero() {
		m = m.WithTime(acc.at)
	}
	return m, true
}

// precision is what a metric's time is rounded to, as Telegraf 1.39 rounds it: the input's
// own precision when it sets one. Otherwise what an input gathers is rounded to [agent]
// precision or, when that is unset, to the unit of the gather interval: a second for
// intervals of a second or more. What a service input adds on its own, such as a
// listener's metrics, is then never rounded: the sender's timestamps are kept as sent.
func (acc *accumulator) precision(st *agentState) time.Duration {
	if p := acc.in.cfg.Common.Precision; p > 0 {
		return time.Duration(p) // the input's own, which Telegraf applies to a service's metrics too
	}
	if acc.service {
		return time.Nanosecond
	}
	if st.precision > 0 {
		return st.precision
	}
	switch iv := acc.in.interval(); {
	case iv >= time.Second:
		return time.Second
	case iv >= time.Millisecond:
		return time.Millisecond
	case iv >= time.Microsecond:
		return time.Microsecond
	}
	return time.Nanosecond
}

// addTags adds the input's tags, then the global tags, that m lacks. A line metric gets them
// in its text, unless one cannot be written there as it is.
func (ri *runningInput) addTags(m morse.Metric, st *agentState) morse.Metric {
	return m.WithMissingTags(ri.tags).WithMissingTags(st.globalTags)
}

// AddFields implements morse.Accumulator.
func (acc *accumulator) AddFields(name string, fields map[string]any, tags map[string]string, t ...time.Time) {
	addFields(acc, name, fields, tags, t)
}

// addFields is AddFields for any accumulator: it builds the metric and adds it.
func addFields(acc morse.Accumulator, name string, fields map[string]any, tags map[string]string, t []time.Time) {
	tm := time.Now()
	if len(t) > 0 {
		tm = t[0]
	}
	m, skipped := morse.NewMetricFromMaps(name, maps.Clone(tags), fields, tm)
	if skipped > 0 {
		acc.AddError(fmt.Errorf("%s: %d fields of unsupported types left out", name, skipped))
	}
	if len(m.Fields()) > 0 {
		acc.AddMetric(m)
	}
}

// AddError implements morse.Accumulator: the error is counted and logged, at most once per 30 s
// per input, with the number held back since.
func (acc *accumulator) AddError(err error) {
	if err == nil {
		return
	}
	ri := acc.in
	ri.errs.Incr()
	ri.errLog.Log(ri.log, slog.LevelError, "gather error", "error", err)
}

// timed returns what a gather that starts at start adds to, and the function to call when
// it ends. With time_source = "collection_start" that is a copy of acc that gives every
// metric the start; with "collection_end" it holds the gather's metrics until release
// gives them its end. Otherwise it is acc itself.
func (acc *accumulator) timed(start time.Time) (morse.Accumulator, func(end time.Time)) {
	switch acc.in.cfg.Common.TimeSource {
	case config.TimeCollectionStart:
		c := *acc
		c.at = start
		return &c, func(time.Time) {}
	case config.TimeCollectionEnd:
		h := &heldMetrics{acc: acc}
		return h, h.release
	}
	return acc, func(time.Time) {}
}

// heldMetrics holds what a gather adds until it ends, for time_source = "collection_end".
// Errors pass at once. A plugin may add from several goroutines, as the accumulator's
// contract allows, and one that outlives its gather adds after release: those metrics
// go on at once, with the gather's end.
type heldMetrics struct {
	acc *accumulator
	mu  sync.Mutex
	ms  []morse.Metric
	end *accumulator // set by release
}

// AddMetric implements morse.Accumulator.
func (h *heldMetrics) AddMetric(m morse.Metric) {
	h.mu.Lock()
	if end := h.end; end != nil {
		h.mu.Unlock()
		end.AddMetric(m)
		return
	}
	h.ms = append(h.ms, m)
	h.mu.Unlock()
}

// AddFields implements morse.Accumulator.
func (h *heldMetrics) AddFields(name string, fields map[string]any, tags map[string]string, t ...time.Time) {
	addFields(h, name, fields, tags, t)
}

// AddError implements morse.Accumulator.
func (h *heldMetrics) AddError(err error) { h.acc.AddError(err) }

// release hands the held metrics on, each with the gather's end as its time.
func (h *heldMetrics) release(end time.Time) {
	c := *h.acc
	c.at = end
	h.mu.Lock()
	ms := h.ms
	h.ms, h.end = nil, &c
	h.mu.Unlock()
	if len(ms) > 0 {
		c.AddMetrics(ms)
	}
}
