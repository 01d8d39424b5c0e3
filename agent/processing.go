package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/filter"
	"github.com/morse-agent/morse/selfstat"
)

// stage is the processing between the inputs and the outputs, with Telegraf's semantics:
// the processors in order, then the aggregators; the aggregators' summaries go through the
// processors again (unless skip_processors_after_aggregators) and then to the outputs. An
// agent with neither has no stage, and its hot path pays one nil check.
type stage struct {
	procs []*runningProcessor // for what the inputs add, sorted by order
	after []*runningProcessor // for the aggregators' summaries; none with the skip option
	aggs  []*runningAggregator
}

func newStage(cfg *config.Config) *stage {
	if len(cfg.Processors) == 0 && len(cfg.Aggregators) == 0 {
		return nil
	}
	s := &stage{}
	ordered := slices.Clone(cfg.Processors)
	slices.SortStableFunc(ordered, func(a, b *config.ProcessorConfig) int { return cmp.Compare(a.Common.Order, b.Common.Order) })
	for _, pc := range ordered {
		s.procs = append(s.procs, &runningProcessor{cfg: pc, plugin: pc.Plugin})
		if !cfg.Agent.SkipProcessorsAfterAggregators {
			s.after = append(s.after, &runningProcessor{cfg: pc, plugin: cmp.Or[morse.Processor](pc.AfterAggregators, pc.Plugin)})
		}
	}
	for _, ac := range cfg.Aggregators {
		s.aggs = append(s.aggs, &runningAggregator{cfg: ac})
	}
	return s
}

// run processes what an input added and returns what goes on to the outputs. It may reuse
// ms's backing array.
func (s *stage) run(ms []morse.Metric) []morse.Metric {
	ms = applyAll(s.procs, ms)
	if len(s.aggs) == 0 {
		return ms
	}
	kept := ms[:0]
	for _, m := range ms {
		drop := false
		for _, a := range s.aggs {
			if a.add(m) {
				drop = true
			}
		}
		if !drop {
			kept = append(kept, m)
		}
	}
	return kept
}

func applyAll(procs []*runningProcessor, ms []morse.Metric) []morse.Metric {
	for _, p := range procs {
		if len(ms) == 0 {
			break
		}
		ms = p.apply(ms)
	}
	return ms
}

// runningProcessor is one processor with its filter: a metric the filter does not select
// passes the processor unchanged, in its place; one it selects loses the fields and tags
// that fieldinclude, fieldexclude, taginclude and tagexclude remove before the processor
// sees it, and is dropped when no field is left, as in Telegraf (RunningProcessor.Add).
type runningProcessor struct {
	cfg    *config.ProcessorConfig
	plugin morse.Processor
}

// apply passes each run of consecutive metrics that the filter selects to the processor in
// one call, so that a filtered processor costs what an unfiltered one does; the results
// and the metrics it passes over are gathered in ms's own backing array while they fit
// behind what is still to be read, and in a new one once a processor returns more metrics
// than it was given.
// apply gives the processor each run of consecutive metrics that the filter selects in one
// call, so that a filter does not turn a batch into calls of one metric each (which cost
// a processor with a lock or a per-call setup several times as much per metric), and keeps
// the results in ms's own array while they fit.
func (rp *runningProcessor) apply(ms []morse.Metric) []morse.Metric {
	f := rp.cfg.Filter
	if f == nil {
		return rp.plugin.Apply(ms)
	}
	out, shared := ms[:0], true
	// emit appends to out; while out shares ms's array it must end at or before ms[read],
	// the first metric not yet read, so it moves to an array of its own before passing it.
	emit := func(read int, add ...morse.Metric) {
		if shared && len(out)+len(add) > read {
			out, shared = append(make([]morse.Metric, 0, len(out)+len(add)+len(ms)-read), out...), false
		}
		out = append(out, add...)
	}
	for i := 0; i < len(ms); {
		if !f.Selects(ms[i]) {
			emit(i+1, ms[i])
			i++
			continue
		}
		j := i + 1
		for j < len(ms) && f.Selects(ms[j]) {
			j++
		}
		// The run is capped at its end, so the processor cannot write over what follows.
		emit(j, rp.plugin.Apply(trimRun(f, ms[i:j:j]))...)
		i = j
	}
	return out
}

// trimRun trims each metric of run with the filter, in place, and returns the run without
// the metrics left with no field. run is the stage's own, as what a processor is given is.
func trimRun(f *filter.Filter, run []morse.Metric) []morse.Metric {
	if !f.Trims() {
		return run
	}
	kept := run[:0]
	for _, m := range run {
		if m, ok := f.Trim(m); ok {
			kept = append(kept, m)
		}
	}
	return kept
}

// runningAggregator is one aggregator with its window. Add and the push at the end of each
// window take turns under its lock, as Telegraf's aggregators expect.
type runningAggregator struct {
	cfg *config.AggregatorConfig

	mu           sync.Mutex
	since, until time.Time // the current window
	started      bool
}

// add hands m to the aggregator when its filter selects it and its time falls in the window
// (with grace), and reports whether the original must not go on to the outputs. As in
// Telegraf (RunningAggregator.Add), the aggregator gets m without the fields and tags its
// filter's fieldinclude, fieldexclude, taginclude and tagexclude remove, and nothing when
// no field is left; the original goes on whole.
func (ra *runningAggregator) add(m morse.Metric) (dropOriginal bool) {
	if !ra.cfg.Filter.Selects(m) {
		return false
	}
	c := &ra.cfg.Common
	m, ok := ra.cfg.Filter.Trim(m)
	if !ok {
		return c.DropOriginal
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if !ra.started {
		return c.DropOriginal
	}
	// As in Telegraf, the window takes metrics from grace before it starts until it is
	// pushed, delay after it ends; others are not aggregated.
	t := m.Time()
	if t.Before(ra.since.Add(-time.Duration(c.Grace))) || t.After(ra.until.Add(time.Duration(c.Delay))) {
		return c.DropOriginal
	}
	ra.cfg.Plugin.Add(m)
	return c.DropOriginal
}

// window sets the first window: aligned to multiples of the period with round_interval,
// as Telegraf aligns it, or starting now.
func (ra *runningAggregator) window(now time.Time, round bool) {
	period := time.Duration(ra.cfg.Common.Period)
	until := now.Add(period)
	if round {
		until = now.Truncate(period).Add(period)
	}
	ra.mu.Lock()
	ra.since, ra.until, ra.started = until.Add(-period), until, true
	ra.mu.Unlock()
}

// push takes the window's summaries, starts the next window and returns the summaries with
// the aggregator's name options and tags applied.
func (ra *runningAggregator) push() []morse.Metric {
	var acc collectAcc
	ra.mu.Lock()
	ra.cfg.Plugin.Push(&acc)
	ra.cfg.Plugin.Reset()
	period := time.Duration(ra.cfg.Common.Period)
	ra.since, ra.until = ra.until, ra.until.Add(period)
	ra.mu.Unlock()
	c := &ra.cfg.Common
	tags := sortedTags(c.Tags)
	for i, m := range acc.ms {
		if c.NameOverride != "" {
			m = m.WithName(c.NameOverride)
		}
		if c.NamePrefix != "" || c.NameSuffix != "" {
			m = m.WithName(c.NamePrefix + m.Name() + c.NameSuffix)
		}
		acc.ms[i] = m.WithMissingTags(tags)
	}
	return acc.ms
}

// run pushes the aggregator at the end of each window plus its delay, and once more when
// ctx ends, so that a stopping agent does not lose the window in progress. emit carries the
// summaries on. The first window is set (window) before run starts, so that no metric
// added meanwhile is missed.
func (ra *runningAggregator) run(ctx context.Context, emit func([]morse.Metric)) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		ra.mu.Lock()
		due := ra.until.Add(time.Duration(ra.cfg.Common.Delay))
		ra.mu.Unlock()
		timer.Reset(time.Until(due))
		select {
		case <-ctx.Done():
			emit(ra.push())
			return
		case <-timer.C:
			emit(ra.push())
		}
	}
}

// collectAcc collects what an aggregator pushes.
type collectAcc struct{ ms []morse.Metric }

func (c *collectAcc) AddMetric(m morse.Metric) { c.ms = append(c.ms, m) }
func (c *collectAcc) AddFields(name string, fields map[string]any, tags map[string]string, t ...time.Time) {
	tm := time.Now()
	if len(t) > 0 {
		tm = t[0]
	}
	if m, _ := morse.NewMetricFromMaps(name, tags, fields, tm); len(m.Fields()) > 0 {
		c.ms = append(c.ms, m)
	}
}
func (c *collectAcc) AddError(error) {}

// startAggregators runs the aggregators of s, each pushing its summaries through the
// processors after aggregation to emit, or to the outputs when emit is nil, and returns the
// function that stops them after a last push.
func (a *Agent) startAggregators(s *stage, emit func(morse.Metric)) (stop func()) {
	if s == nil || len(s.aggs) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	round := a.cfg.Agent.RoundInterval
	for _, ra := range s.aggs {
		ra.window(time.Now(), round)
		wg.Go(func() { ra.run(ctx, func(ms []morse.Metric) { a.emitSummaries(s, ms, emit) }) })
	}
	return func() { cancel(); wg.Wait() }
}

// emitSummaries carries aggregators' summaries through the processors after aggregation to
// emit, or to every output when emit is nil.
func (a *Agent) emitSummaries(s *stage, ms []morse.Metric, emit func(morse.Metric)) {
	ms = applyAll(s.after, ms)
	if emit != nil {
		for _, m := range ms {
			emit(m)
		}
		return
	}
	for _, ro := range a.state.Load().outputs {
		for _, m := range ms {
			ro.add(m)
		}
	}
}

// setupProcessing gives every processor and aggregator of cfg its logger and stats and
// initialises it, as an input or output is, before any of them runs.
func (a *Agent) setupProcessing(cfg *config.Config) error {
	var errs []error
	prepare := func(p any, kind, name, alias string, level config.LogLevel) {
		if s, ok := p.(morse.LoggerSetter); ok {
			s.SetLogger(pluginLogger(a.log, kind, name, alias, level))
		}
		if s, ok := p.(morse.StatsSetter); ok {
			tags := map[string]string{strings.TrimSuffix(kind, "s"): name}
			if alias != "" {
				tags["alias"] = alias
			}
			s.SetStats(selfstat.NewPluginStats(a.stats, "internal_"+name, tags))
		}
		if i, ok := p.(morse.Initializer); ok {
			if err := i.Init(); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: init: %w", kind, name, err))
			}
		}
		a.clock.give(p)
	}
	for _, pc := range cfg.Processors {
		prepare(pc.Plugin, "processors", pc.Name, pc.Common.Alias, pc.Common.LogLevel)
		if pc.AfterAggregators != nil && pc.AfterAggregators != pc.Plugin {
			prepare(pc.AfterAggregators, "processors", pc.Name, pc.Common.Alias, pc.Common.LogLevel)
		}
	}
	for _, ac := range cfg.Aggregators {
		prepare(ac.Plugin, "aggregators", ac.Name, ac.Common.Alias, ac.Common.LogLevel)
	}
	return errors.Join(errs...)
}
