package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/morse-agent/morse"
)

// TestWarmUp is how long Test waits between the discarded first gather of an input that
// reports rates (twoSampleInputs) and the gather it prints: Telegraf's --test waits 500 ms.
const TestWarmUp = 500 * time.Millisecond

// twoSampleInputs are the inputs whose values are rates between two samples, so that
// their first gather has no interval or a meaningless one: cpu's usage over the few
// milliseconds since Init showed 100% user or 100% idle, and procstat has no cpu_usage
// from one sample. Telegraf's --test gathers these (and mongodb) twice, TestWarmUp apart,
// and prints the second; Test does the same.
var twoSampleInputs = map[string]bool{"cpu": true, "procstat": true, "mongodb": true}

// Test gathers every input once and hands each processed metric to emit instead of the
// outputs, as `morse --test` does. It is TestWait with no wait.
func (a *Agent) Test(ctx context.Context, emit func(morse.Metric)) error {
	return a.TestWait(ctx, 0, emit)
}

// TestWait gathers every input once and hands each processed metric to emit, then lets the
// service inputs run for wait before it stops them, as `telegraf --test-wait` does, so that
// a listener's metrics of that time are printed too. An input of twoSampleInputs is
// gathered once more before, its metrics discarded, and TestWarmUp earlier. An input's
// error (inputErrors) makes TestWait fail, with Telegraf's message, after every input has had its gather:
// `telegraf --test` means to (agent.Test checks the count of failed gathers, although in
// 1.39.3 its test gathers never add to that count), so a script that tests a config learns
// that an input cannot read its source.
func (a *Agent) TestWait(ctx context.Context, wait time.Duration, emit func(morse.Metric)) error {
	stopAggs := a.startAggregators(a.stage, emit)
	before := a.inputErrors()
	errs := []error{a.warmUp(ctx)}
	var stops []func()
	for _, ri := range a.inputs {
		stop, err := ri.gatherStarted(ctx, ri.accumulator(emit))
		stops, errs = append(stops, stop), append(errs, err)
	}
	if wait > 0 {
		errs = append(errs, sleep(ctx, wait))
	}
	for _, stop := range stops {
		stop()
	}
	stopAggs() // the summaries of what was gathered
	if n := a.inputErrors() - before; n > 0 {
		errs = append(errs, fmt.Errorf("input plugins recorded %d errors", n))
	}
	return errors.Join(errs...)
}

// inputErrors is the sum of the inputs' errors counters (internal_gather's "errors"): a
// gather that returned an error, and each error an input reported through its accumulator
// (a file that is missing, a server that refused), which morse's inputs report where some
// of Telegraf's return the error.
func (a *Agent) inputErrors() int64 {
	var n int64
	for _, ri := range a.inputs {
		n += ri.errs.Get()
	}
	return n
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("test mode's wait: %w", ctx.Err())
	}
}

// warmUp runs the discarded first gather of each input of twoSampleInputs, then waits
// TestWarmUp once for all of them. Service inputs are left out: their gather needs Start.
func (a *Agent) warmUp(ctx context.Context) error {
	warmed := false
	for _, ri := range a.inputs {
		if _, service := ri.cfg.Plugin.(morse.ServiceInput); service || !twoSampleInputs[ri.cfg.Name] {
			continue
		}
		ri.warmGather(ctx)
		warmed = true
	}
	if !warmed {
		return nil
	}
	return sleep(ctx, TestWarmUp)
}

// warmGather gathers once into nothing, so that the next gather has a baseline. A failure
// is counted and logged as any gather's.
func (ri *runningInput) warmGather(ctx context.Context) {
	gctx, cancel := context.WithTimeout(ctx, ri.interval())
	defer cancel()
	acc := ri.accumulator(nil)
	if err := ri.cfg.Plugin.Gather(gctx, discardAccumulator{acc}); err != nil {
		ri.gatherErrs.Incr()
		acc.AddError(err)
	}
}

// discardAccumulator drops what a warm-up gather adds, before the input's options and the
// processors see it, as Telegraf's --test does; errors still go to the input's log.
type discardAccumulator struct{ acc *accumulator }

func (discardAccumulator) AddMetric(morse.Metric)                                            {}
func (discardAccumulator) AddFields(string, map[string]any, map[string]string, ...time.Time) {}
func (d discardAccumulator) AddError(err error)                                              { d.acc.AddError(err) }
