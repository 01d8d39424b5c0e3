package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/morse-agent/morse/batch"
)

// hardGrace is how long past shutdown_timeout Run may take to return. At the deadline every
// writer's hard shutdown cancels its writes, waits a moment for one that ignores that
// (batch's abandonAfter, 0.5 s) and books what is left. An output still closing after
// hardGrace is left behind and reported, so that the process exits within
// shutdown_timeout + 1 s however many outputs and inputs it has.
const hardGrace = 700 * time.Millisecond

// shutdown stops the inputs, then flushes and closes every output, all within one
// shutdown_timeout that starts now: inputs that are slow to stop use up the outputs' time
// rather than add to it. The error reports what each output left unsent.
func (a *Agent) shutdown() error {
	timeout := time.Duration(a.cfg.Agent.ShutdownTimeout)
	a.log.Info("shutting down", "shutdown_timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hard, cancelHard := context.WithTimeout(context.Background(), timeout+hardGrace)
	defer cancelHard()
	if !within(ctx, func() {
		stopAll(a.inputs)
		a.stopAggs() // the windows in progress go to the outputs before they flush
	}) {
		a.log.Warn("inputs still stopping when shutdown_timeout passed; closing the outputs without them")
	}
	err := a.closeOutputsBy(ctx, hard, a.outputs)
	if !within(hard, a.retiring.Wait) {
		a.log.Error("outputs removed by a reload still closing; exiting without them")
	}
	return err
}

// within runs f and reports whether it returned before ctx ended. If it did not, f goes on
// in the background: a shutdown that must end cannot wait for it, and the process exits.
func within(ctx context.Context, f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// stopAll stops inputs in parallel, so that the slow stops of several (a listener letting
// its requests finish) do not add up.
func stopAll(inputs []*runningInput) {
	var wg sync.WaitGroup
	for _, ri := range inputs {
		wg.Go(ri.stop)
	}
	wg.Wait()
}

// closeOutputs flushes and closes outputs within shutdown_timeout from now; see
// closeOutputsBy.
func (a *Agent) closeOutputs(outputs []*runningOutput) error {
	return a.closeOutputsWithin(time.Duration(a.cfg.Agent.ShutdownTimeout), outputs)
}

// closeOutputsWithin is closeOutputs with the timeout given, for a goroutine that must not
// read a.cfg, which the next reload replaces.
func (a *Agent) closeOutputsWithin(timeout time.Duration, outputs []*runningOutput) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hard, cancelHard := context.WithTimeout(context.Background(), timeout+hardGrace)
	defer cancelHard()
	return a.closeOutputsBy(ctx, hard, outputs)
}

// closeOutputsBy flushes and closes outputs in parallel until ctx ends, against that one
// deadline, so that neither one slow sink nor the number of outputs stretches the shutdown.
// It logs and returns what each left unsent. An output whose Close has not returned when
// hard ends is left behind: its error says so and how many metrics it still held.
func (a *Agent) closeOutputsBy(ctx, hard context.Context, outputs []*runningOutput) error {
	type closed struct {
		i   int
		err error
	}
	results := make(chan closed, len(outputs))
	pending := 0
	for i, ro := range outputs {
		if ro.w == nil {
			continue
		}
		pending++
		go func() {
			// The writer first: its Close dead-letters what it leaves at shutdown.
			err := ro.w.Close(ctx)
			results <- closed{i, errors.Join(err, ro.closeDeadLetter())}
		}()
	}
	errs := make([]error, len(outputs))
	done := make([]bool, len(outputs))
	for ; pending > 0; pending-- {
		select {
		case r := <-results:
			errs[r.i], done[r.i] = r.err, true
		case <-hard.Done():
			a.logClosed(outputs, errs, done)
			return errors.Join(append(errs, a.leftBehind(outputs, done)...)...)
		}
	}
	a.logClosed(outputs, errs, done)
	return errors.Join(errs...)
}

// leftBehind reports the outputs whose Close did not return in time.
func (a *Agent) leftBehind(outputs []*runningOutput, done []bool) []error {
	var errs []error
	for i, ro := range outputs {
		if ro.w == nil || done[i] {
			continue
		}
		buffered := ro.w.Stats().BufferSize
		a.log.Error("output still closing past shutdown_timeout; exiting without it",
			"output", ro.cfg.Name, "buffered", buffered)
		errs = append(errs, fmt.Errorf("output %s: still closing %s past shutdown_timeout, %d metrics buffered",
			ro.cfg.Name, hardGrace, buffered))
	}
	return errs
}

// logClosed logs, per output that closed, what it wrote or left unsent.
func (a *Agent) logClosed(outputs []*runningOutput, errs []error, done []bool) {
	for i, err := range errs {
		var unsent *batch.UnsentError
		if !done[i] {
			continue
		}
		if errors.As(err, &unsent) {
			a.log.Error("output left metrics unsent", "output", outputs[i].cfg.Name, "unsent", unsent.Left,
				"unknown", unsent.Unknown)
		} else if err == nil && outputs[i].w != nil {
			a.log.Info("output flushed", "output", outputs[i].cfg.Name, "written", outputs[i].w.Stats().Written)
		}
	}
}
