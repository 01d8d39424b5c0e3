package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

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

// process applies the input's options to m, then time_source's time, after the precision
// as in Telegraf: a gather's start or end time is not rounded.
func (acc *accumulator) process(m morse.Metric, st *agentState, precision time.Duration) (morse.Metric, bool) {
	m, ok := acc.in.process(m, st, precision)
	if ok && !acc.at.IsZero() {
		m = m.WithTime(acc.at)
	}
	return m, ok
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
