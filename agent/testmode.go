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
// outputs, as `morse --test` does. An input of twoSampleInputs is gathered once more before,
// its metrics discarded, and TestWarmUp earlier. A gather that failed makes Test fail,
// with Telegraf's message, after every input has had its gather: `telegraf --test` means
// to (agent.Test checks the count of failed gathers), so a script that tests a config
// learns that an input cannot read its source.
func (a *Agent) Test(ctx context.Context, emit func(morse.Metric)) error {
	stopAggs := a.startAggregators(a.stage, emit)
	before := a.gatherErrors.Get()
	errs := []error{a.warmUp(ctx)}
	for _, ri := range a.inputs {
		errs = append(errs, ri.runOnce(ctx, ri.accumulator(emit)))
	}
	stopAggs() // the summaries of what was gathered
	if n := a.gatherErrors.Get() - before; n > 0 {
		errs = append(errs, fmt.Errorf("input plugins recorded %d errors", n))
	}
	return errors.Join(errs...)
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
	t := time.NewTimer(TestWarmUp)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the second sample of rate inputs: %w", ctx.Err())
	}
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
