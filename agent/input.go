package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/busy"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/selfstat"
)

// runningInput is one configured input inside the agent: its gather loop, its accumulator
// and its counters (internal_gather).
type runningInput struct {
	cfg   *config.InputConfig
	agent *Agent
	// every and identity are the config's Interval and Identity when the input was set up:
	// a program may resolve the same config again for a reload.
	every    time.Duration
	identity string
	log      *slog.Logger
	tags     []morse.Tag // the input's own [inputs.x.tags], sorted

	series                               *selfstat.Series      // internal_gather of this input
	pluginStats                          *selfstat.PluginStats // the plugin's own counters, if it keeps any
	gathered, errs, gatherTime, timeouts *selfstat.Counter
	gatherErrs, startupErrs              *selfstat.Counter // see countGathers

	errLog *throttle.Throttle
	// gathering is since when the gather in progress runs, for the watchdog (Agent.Stuck).
	gathering busy.Since

	// fed records the outputs this input's metrics reach, and flow counts its waits for
	// room in them (WaitForRoom).
	fed  atomic.Pointer[fedSet]
	flow flowStats
	// selfTags are the tags of the input's self-metrics: input, alias and the instance id.
	selfTags map[string]string

	cancel  context.CancelFunc
	done    chan struct{}
	service morse.ServiceInput // set once Start succeeded
	// pending is a service input whose Start failed under startup_error_behavior = "retry":
	// the gather loop starts it again before each gather until it runs (startPending).
	pending morse.ServiceInput
}

// newRunningInput prepares ic's input: logger, stats and Init. Init is left out for an
// instance that a running input already is, which a reload passes again with other
// settings: it was initialised once, and Init is called once per instance.
func (a *Agent) newRunningInput(ic *config.InputConfig) (*runningInput, error) {
	ri := &runningInput{cfg: ic, agent: a, errLog: throttle.New(30 * time.Second),
		every: ic.Interval(), identity: ic.Identity()}
	ri.log = pluginLogger(a.log, "inputs", ic.Name, ic.Common.Alias, ic.Common.LogLevel)
	ri.tags = sortedTags(ic.Common.Tags)
	st := ri.statTags()
	st[selfstat.IDTag] = instanceID("inputs", ic.Name, ic.Fingerprint, a.nextPlace())
	ri.selfTags = st
	ri.series = a.stats.NewSeries("internal_gather", st)
	ri.countGathers()

	if s, ok := ic.Plugin.(morse.LoggerSetter); ok {
		s.SetLogger(ri.log)
	}
	if s, ok := ic.Plugin.(morse.StatsSetter); ok {
		ri.pluginStats = selfstat.NewPluginStats(a.stats, "internal_"+ic.Name, st)
		s.SetStats(ri.pluginStats)
	}
	if s, ok := ic.Plugin.(morse.SelfStatsSetter); ok {
		s.SetSelfStats(a.stats)
	}
	if i, ok := ic.Plugin.(morse.Initializer); ok && !a.inputRuns(ic.Plugin) {
		if err := i.Init(); err != nil {
			return ri, fmt.Errorf("inputs.%s (%s): init: %w", ic.Name, ic.Source, err)
		}
	}
	return ri, nil
}

// statTags are the tags of the input's self-metrics.
func (ri *runningInput) statTags() map[string]string {
	st := map[string]string{"input": ri.cfg.Name}
	if ri.cfg.Common.Alias != "" {
		st["alias"] = ri.cfg.Common.Alias
	}
	return st
}

func (ri *runningInput) interval() time.Duration { return ri.every }

// start starts a service input and the gather loop.
func (ri *runningInput) start(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	if s, ok := ri.cfg.Plugin.(morse.ServiceInput); ok {
		if err := s.Start(ctx, ri.outputAccumulator().forService()); err != nil {
			ri.startupErrs.Incr()
			if err := ri.startFailed(s, err); err != nil {
				cancel()
				return err
			}
			if ri.pending == nil {
				cancel() // left out: no gather loop
				return nil
			}
		} else {
			ri.service = s
		}
	}
	ri.cancel, ri.done = cancel, make(chan struct{})
	go ri.loop(ctx)
	return nil
}

// stop ends the gather loop, waiting for a gather in progress, then stops a service input.
func (ri *runningInput) stop() {
	if ri.cancel == nil {
		return
	}
	ri.cancel()
	<-ri.done
	if ri.service != nil {
		ri.service.Stop()
		ri.service = nil
	}
	ri.cancel = nil
}

// loop gathers every interval. With round_interval the first gather waits for the next
// multiple of the interval, as Telegraf does, so that hosts report on the same marks;
// without it the first gather is at once. A gather that overruns skips the marks it missed
// rather than queueing them, and collection_jitter delays each gather by a random amount.
func (ri *runningInput) loop(ctx context.Context) {
	defer close(ri.done)
	interval := ri.interval()
	st := ri.agent.state.Load()
	next := time.Now()
	if st.roundInterval {
		next = next.Truncate(interval).Add(interval)
	}
	next = next.Add(ri.offset()) // collection_offset: every later mark is shifted with it
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if j := ri.jitter(); j > 0 {
			timer.Reset(time.Duration(rand.Int64N(int64(j))))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if ri.startPending(ctx) {
			ri.gatherOnce(ctx, ri.outputAccumulator())
		}
		next = next.Add(interval)
		if now := time.Now(); !next.After(now) {
			missed := now.Sub(next)/interval + 1
			next = next.Add(missed * interval)
			ri.log.Warn("gather took longer than the interval; skipped collections", "skipped", int(missed), "interval", interval)
		}
		timer.Reset(time.Until(next))
	}
}

// gatherOnce runs one Gather, bounded by the interval, and counts its time and outcome. With
// time_source, every metric of the gather carries the gather's start or end time.
func (ri *runningInput) gatherOnce(ctx context.Context, acc *accumulator) {
	gctx, cancel := context.WithTimeout(ctx, ri.interval())
	defer cancel()
	start := time.Now()
	ri.gathering.Start(start)
	target, release := acc.timed(start)
	err := ri.cfg.Plugin.Gather(gctx, target)
	end := time.Now()
	release(end)
	ri.gathering.Done()
	ri.gatherTime.Add(int64(end.Sub(start)))
	if errors.Is(gctx.Err(), context.DeadlineExceeded) {
		ri.timeouts.Incr()
	}
	if err != nil {
		ri.gatherErrs.Incr()
		acc.AddError(err)
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

func (ri *runningInput) accumulator(emit func(morse.Metric)) *accumulator {
	return &accumulator{in: ri, emit: emit}
}

// outputAccumulator is the accumulator of a running input: it hands metrics to the outputs,
// so line metrics may travel unexpanded to outputs that write them as they are.
func (ri *runningInput) outputAccumulator() *accumulator {
	return &accumulator{in: ri, emit: ri.fanOut, toOutputs: true}
}

// accumulator applies the input's options and the agent's global settings to each metric,
// then emits it: to the outputs when running, to a printer under --test.
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

// PrefersLines implements LineAccumulator: line metrics pass through when the input leaves
// their names alone and the outputs write most of them as they are.
func (acc *accumulator) PrefersLines() bool {
	return acc.toOutputs && acc.in.keepsLines() && acc.in.agent.state.Load().linesPass
}

// keepsLines reports whether process can handle a line metric without expanding it: the
// input's filter, if any, tests names only, and the name options are unset. Tags it adds to
// the text (addLineTags).
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

// sortedTags returns the tags of a config's tags table, sorted by key.
func sortedTags(m map[string]string) []morse.Tag {
	tags := make([]morse.Tag, 0, len(m))
	for k, v := range m {
		tags = append(tags, morse.Tag{Key: k, Value: v})
	}
	slices.SortFunc(tags, func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) })
	return tags
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

// process applies, in Telegraf's order, the input's filter, its name options, its tags and
// the global tags (neither replaces a tag the metric already has), and the precision.
func (ri *runningInput) process(m morse.Metric, st *agentState, precision time.Duration) (morse.Metric, bool) {
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
