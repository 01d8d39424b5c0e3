package agent

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

type reloadRequest struct {
	cfg   *config.Config
	reply chan error
}

// Reload replaces the running config with cfg. Outputs whose config did not change keep
// running with their buffers, so nothing is lost; so do unchanged inputs, so listeners keep
// their sockets. If any new plugin fails to start, nothing changes and the error says why.
func (a *Agent) Reload(ctx context.Context, cfg *config.Config) error {
	if err := checkConfig(cfg); err != nil {
		return err
	}
	if !a.running.Load() {
		return errors.New("morse: reload: agent is not running")
	}
	req := reloadRequest{cfg: cfg, reply: make(chan error, 1)}
	select {
	case a.reloadCh <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// applyReload runs in Run's goroutine. It prepares everything new before it touches
// anything running, so a failure leaves the agent as it was.
func (a *Agent) applyReload(inputsCtx context.Context, cfg *config.Config) error {
	prev := a.cfg
	a.cfg = cfg // setup reads the new [agent] settings, such as precision
	outs, keptOut, err := a.reuseOutputs(cfg)
	if err != nil {
		a.cfg = prev
		return err
	}
	ins, keptIn, err := a.reuseInputs(cfg)
	err = errors.Join(err, a.setupProcessing(cfg))
	links, linkErr := findGuards(cfg.Processors, outputConfigs(outs))
	err = errors.Join(err, linkErr)
	if err == nil {
		a.handOverDiskBuffers(a.outputs, outs, keptOut)
		err = a.startNewOutputs(outs, keptOut)
	}
	if err != nil {
		a.cfg = prev
		for i, ro := range outs {
			if !keptOut[i] && ro.w != nil {
				_ = ro.w.Close(canceledContext())
				_ = ro.closeDeadLetter()
			}
		}
		return err
	}
	oldOuts, oldIns := a.outputs, a.inputs
	a.outputs, a.inputs = outs, ins
	linkGuards(links) // kept outputs too: the processors are new
	// The processing stage is rebuilt from the new config; the old aggregators push their
	// windows in progress to the new outputs before the new ones start.
	stopOldAggs := a.stopAggs
	a.stage = newStage(cfg)
	a.state.Store(a.newState(cfg, ins, outs))
	stopOldAggs()
	a.stopAggs = a.startAggregators(a.stage, nil)
	a.clock.start() // if a new processor took it
	a.setBudget(cfg)

	startErr := a.swapInputs(inputsCtx, oldIns, ins, keptIn)
	gone := removed(oldOuts, outs)
	timeout := time.Duration(cfg.Agent.ShutdownTimeout)
	a.retiring.Go(func() {
		_ = a.closeOutputsWithin(timeout, gone)
		for _, ro := range gone {
			ro.w.UnregisterStats()
		}
	})
	a.log.Info("config reloaded", "inputs", len(ins), "outputs", len(outs),
		"outputs_kept", countTrue(keptOut), "inputs_kept", countTrue(keptIn))
	a.logConfigWarnings(cfg)
	return startErr
}

// swapInputs stops the inputs of old that ins left out, then starts those of ins that
// were not kept. The inputs that go away stop first, so that a listener that moved to
// another config entry can bind its address again.
func (a *Agent) swapInputs(ctx context.Context, old, ins []*runningInput, kept []bool) error {
	gone := removed(old, ins)
	stopAll(gone)
	for _, ri := range gone {
		ri.removeStats()
	}
	var fresh []*runningInput
	for i, ri := range ins {
		if !kept[i] {
			fresh = append(fresh, ri)
		}
	}
	return a.startInputs(ctx, fresh)
}

// reuse matches each new config to a running plugin with the same name and fingerprint and
// keeps that one; for the others it calls build. It returns the plugins in the new config's
// order and which of them were kept.
func reuse[C any, R any](running []R, configs []C, same func(R, C) bool, build func(C) (R, error)) ([]R, []bool, error) {
	taken := make([]bool, len(running))
	out := make([]R, len(configs))
	kept := make([]bool, len(configs))
	var errs []error
	for i, c := range configs {
		for j, old := range running {
			if !taken[j] && same(old, c) {
				taken[j], kept[i], out[i] = true, true, old
				break
			}
		}
		if !kept[i] {
			var err error
			out[i], err = build(c)
			errs = append(errs, err)
		}
	}
	return out, kept, errors.Join(errs...)
}

// reuseOutputs keeps running outputs whose config did not change and sets up the others
// (not yet started).
func (a *Agent) reuseOutputs(cfg *config.Config) ([]*runningOutput, []bool, error) {
	same := func(ro *runningOutput, oc *config.OutputConfig) bool {
		return ro.cfg.Name == oc.Name && ro.identity == oc.Identity()
	}
	return reuse(a.outputs, cfg.Outputs, same, a.newRunningOutput)
}

// reuseInputs keeps running inputs whose config did not change and prepares the others. An
// input that startup_error_behavior left out is not running and is tried again, as a reload
// of Telegraf starts every plugin afresh.
func (a *Agent) reuseInputs(cfg *config.Config) ([]*runningInput, []bool, error) {
	same := func(ri *runningInput, ic *config.InputConfig) bool {
		return ri.cancel != nil && ri.cfg.Name == ic.Name && ri.identity == ic.Identity()
	}
	return reuse(a.inputs, cfg.Inputs, same, a.newRunningInput)
}

// outputConfigs returns the configs of outs.
func outputConfigs(outs []*runningOutput) []*config.OutputConfig {
	ocs := make([]*config.OutputConfig, len(outs))
	for i, ro := range outs {
		ocs[i] = ro.cfg
	}
	return ocs
}

func (a *Agent) startNewOutputs(outs []*runningOutput, kept []bool) error {
	for i, ro := range outs {
		if kept[i] {
			continue
		}
		if err := a.startOutput(ro); err != nil {
			return err
		}
	}
	return nil
}

// removed lists the elements of old that are not in cur.
func removed[T comparable](old, cur []T) []T {
	var out []T
	for _, x := range old {
		if !slices.Contains(cur, x) {
			out = append(out, x)
		}
	}
	return out
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// Once gathers every input once, flushes every output and closes them, as `morse --once`
// does. Service inputs run from before the gathers until the flush. The error reports what
// was left unsent, so a caller can exit non-zero.
func (a *Agent) Once(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("morse: agent is already running")
	}
	defer a.running.Store(false)
	if err := a.startOutputs(); err != nil {
		return err
	}
	stopAggs := a.startAggregators(a.stage, nil)
	var errs []error
	for _, ri := range a.inputs {
		errs = append(errs, ri.runOnce(ctx, ri.outputAccumulator()))
	}
	stopAggs() // a last push: --once loses no summary
	errs = append(errs, a.closeOutputs(a.outputs))
	return errors.Join(errs...)
}

// runOnce starts a service input, gathers once and stops it again.
func (ri *runningInput) runOnce(ctx context.Context, acc *accumulator) error {
	stop, err := ri.gatherStarted(ctx, acc)
	stop()
	return err
}

// gatherStarted starts a service input, gathers once, and returns the function that stops
// the input again (nothing for a plain input, or one that did not start).
func (ri *runningInput) gatherStarted(ctx context.Context, acc *accumulator) (stop func(), err error) {
	stop = func() {}
	if s, ok := ri.cfg.Plugin.(morse.ServiceInput); ok {
		if err := s.Start(ctx, acc.forService()); err != nil {
			ri.startupErrs.Incr()
			// "ignore", "probe" and "retry" leave this input out of the one gather there is.
			err = ri.startFailed(s, err)
			ri.pending = nil
			return stop, err
		}
		stop = s.Stop
	}
	ri.gatherOnce(ctx, acc)
	return stop, nil
}
