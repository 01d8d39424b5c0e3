package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// sortedTags returns the tags of a config's tags table, sorted by key.
func sortedTags(m map[string]string) []morse.Tag {
	tags := make([]morse.Tag, 0, len(m))
	for k, v := range m {
		tags = append(tags, morse.Tag{Key: k, Value: v})
	}
	slices.SortFunc(tags, func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) })
	return tags
}

// jitter is the input's collection_jitter, or [agent]'s when the input sets none.
func (ri *runningInput) jitter() time.Duration {
	if j := ri.cfg.Common.CollectionJitter; j != nil {
		return time.Duration(*j)
	}
	return ri.agent.state.Load().jitter
}

// startFailed applies startup_error_behavior to a service input whose Start failed: it
// returns the error that stops the agent ("error", the default), or nil when the input is
// left out ("ignore", "probe") or is to be started again before each gather ("retry",
// which sets pending).
func (ri *runningInput) startFailed(s morse.ServiceInput, err error) error {
	b := ri.cfg.Common.StartupErrorBehavior
	switch b {
	case config.StartupIgnore, config.StartupProbe:
		ri.log.Error("start failed; the input is left out", "error", err, "startup_error_behavior", string(b))
		return nil
	case config.StartupRetry:
		ri.log.Error("start failed; trying again before each gather", "error", err, "startup_error_behavior", string(b))
		ri.pending = s
		return nil
	}
	return fmt.Errorf("inputs.%s (%s): start: %w", ri.cfg.Name, ri.cfg.Source, err)
}

// startPending starts a service input whose first Start failed under "retry", and reports
// whether the input runs, so that its gather may follow. Only the gather loop calls it.
func (ri *runningInput) startPending(ctx context.Context) bool {
	if ri.pending == nil {
		return true
	}
	ri.gathering.Start(time.Now()) // a start that hangs shows in Agent.Stuck, as a gather would
	err := ri.pending.Start(ctx, ri.outputAccumulator().forService())
	ri.gathering.Done()
	if err != nil {
		ri.startupErrs.Incr()
		ri.errLog.Log(ri.log, slog.LevelError, "start failed again; trying again before the next gather", "error", err)
		return false
	}
	ri.service, ri.pending = ri.pending, nil
	ri.log.Info("started after a failed start")
	return true
}
