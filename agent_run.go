package morse

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// runningOutput is one configured output inside the agent: its filter and its BatchWriter.
type runningOutput struct {
	cfg *OutputConfig
	w   *BatchWriter
}

// add filters m for this output and buffers it. A metric rejected by the filter is counted as
// filtered, not as dropped: the operator asked for it.
func (ro *runningOutput) add(m Metric) {
	if ro.cfg.Filter != nil {
		var ok bool
		if m, ok = ro.cfg.Filter.Apply(m); !ok {
			ro.w.stats.filtered.Incr()
			return
		}
	}
	_ = ro.w.Write(m) // ErrClosed during a reload's hand-over is already counted
}

type reloadRequest struct {
	cfg   *Config
	reply chan error
}

// Reload replaces the running config with cfg. Outputs whose config did not change keep
// running with their buffers, so nothing is lost; so do unchanged inputs, so listeners keep
// their sockets. If any new plugin fails to start, nothing changes and the error says why.
func (a *Agent) Reload(ctx context.Context, cfg *Config) error {
	if err := cfg.Agent.Validate().Err(); err != nil {
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
func (a *Agent) applyReload(inputsCtx context.Context, cfg *Config) error {
	prev := a.cfg
	a.cfg = cfg // setup reads the new [agent] settings, such as precision
	outs, keptOut, err := a.reuseOutputs(cfg)
	if err != nil {
		a.cfg = prev
		return err
	}
	ins, keptIn, err := a.reuseInputs(cfg)
	if err == nil {
		err = a.startNewOutputs(outs, keptOut)
	}
	if err != nil {
		a.cfg = prev
		for i, ro := range outs {
			if !keptOut[i] && ro.w != nil {
				_ = ro.w.Close(canceledContext())
			}
		}
		return err
	}
	oldOuts, oldIns := a.outputs, a.inputs
	a.outputs, a.inputs = outs, ins
	a.state.Store(a.newState(cfg, outs))

	// Inputs that go away stop before new ones start, so a listener that moved to another
	// config entry can bind its address again.
	goneIns := removed(oldIns, ins)
	stopAll(goneIns)
	for _, ri := range goneIns {
		a.stats.Remove(ri.series)
	}
	var fresh []*runningInput
	for i, ri := range ins {
		if !keptIn[i] {
			fresh = append(fresh, ri)
		}
	}
	startErr := a.startInputs(inputsCtx, fresh)
	gone := removed(oldOuts, outs)
	a.retiring.Go(func() {
		_ = a.closeOutputs(gone)
		for _, ro := range gone {
			ro.w.stats.unregister()
		}
	})
	a.log.Info("config reloaded", "inputs", len(ins), "outputs", len(outs),
		"outputs_kept", countTrue(keptOut), "inputs_kept", countTrue(keptIn))
	return startErr
}

// reuseOutputs matches each configured output to a running one with the same name and
// fingerprint; the others are set up afresh (not yet started).
func (a *Agent) reuseOutputs(cfg *Config) ([]*runningOutput, []bool, error) {
	taken := make([]bool, len(a.outputs))
	outs := make([]*runningOutput, len(cfg.Outputs))
	kept := make([]bool, len(cfg.Outputs))
	var errs []error
	for i, oc := range cfg.Outputs {
		for j, old := range a.outputs {
			if !taken[j] && old.cfg.Name == oc.Name && old.cfg.Fingerprint == oc.Fingerprint && oc.Fingerprint != "" {
				taken[j], kept[i], outs[i] = true, true, old
				break
			}
		}
		if !kept[i] {
			errs = append(errs, a.setupOutput(oc))
			outs[i] = &runningOutput{cfg: oc}
		}
	}
	return outs, kept, errors.Join(errs...)
}

// reuseInputs is reuseOutputs for inputs.
func (a *Agent) reuseInputs(cfg *Config) ([]*runningInput, []bool, error) {
	taken := make([]bool, len(a.inputs))
	ins := make([]*runningInput, len(cfg.Inputs))
	kept := make([]bool, len(cfg.Inputs))
	var errs []error
	for i, ic := range cfg.Inputs {
		for j, old := range a.inputs {
			if !taken[j] && old.cfg.Name == ic.Name && old.cfg.Fingerprint == ic.Fingerprint && ic.Fingerprint != "" {
				taken[j], kept[i], ins[i] = true, true, old
				break
			}
		}
		if !kept[i] {
			ri, err := a.newRunningInput(ic)
			errs = append(errs, err)
			ins[i] = ri
		}
	}
	return ins, kept, errors.Join(errs...)
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
	for _, ro := range a.outputs {
		if err := a.startOutput(ro); err != nil {
			return errors.Join(err, a.closeOutputs(a.outputs))
		}
	}
	a.state.Store(a.newState(a.cfg, a.outputs))
	var errs []error
	for _, ri := range a.inputs {
		errs = append(errs, ri.runOnce(ctx, ri.fanOut))
	}
	errs = append(errs, a.closeOutputs(a.outputs))
	return errors.Join(errs...)
}

// Test gathers every input once and hands each processed metric to emit instead of the
// outputs, as `morse --test` does.
func (a *Agent) Test(ctx context.Context, emit func(Metric)) error {
	var errs []error
	for _, ri := range a.inputs {
		errs = append(errs, ri.runOnce(ctx, emit))
	}
	return errors.Join(errs...)
}

// runOnce starts a service input, gathers once and stops it again.
func (ri *runningInput) runOnce(ctx context.Context, emit func(Metric)) error {
	acc := ri.accumulator(emit)
	if s, ok := ri.cfg.Plugin.(ServiceInput); ok {
		if err := s.Start(ctx, acc); err != nil {
			return fmt.Errorf("inputs.%s (%s): start: %w", ri.cfg.Name, ri.cfg.Source, err)
		}
		defer s.Stop()
	}
	ri.gatherOnce(ctx, acc)
	return nil
}
