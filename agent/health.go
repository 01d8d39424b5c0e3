package agent

import (
	"fmt"
	"time"
)

// Stuck names the inputs and outputs whose loops are wedged at now: a gather running past
// its interval plus grace, or a round of writes past the output's write timeout plus grace.
// A gather is bounded by its interval and a write attempt by the timeout, both through
// their contexts, so a plugin past its bound plus grace ignores its context. An agent with
// nothing stuck is making progress: waiting for the next gather or flush, or backing off
// from a sink that is down, is progress. A service manager's watchdog is fed only while
// Stuck is empty.
func (a *Agent) Stuck(now time.Time, grace time.Duration) []string {
	var stuck []string
	st := a.state.Load()
	for _, ri := range st.inputs {
		if d, busy := ri.gathering.For(now); busy && d > ri.interval()+grace {
			stuck = append(stuck, fmt.Sprintf("inputs.%s (gathering for %s)", ri.cfg.Name, d.Round(time.Second)))
		}
	}
	for _, ro := range st.outputs {
		if ro.w == nil {
			continue
		}
		if d, busy := ro.w.WritingFor(now); busy && d > ro.w.WriteTimeout()+grace {
			stuck = append(stuck, fmt.Sprintf("outputs.%s (writing for %s)", ro.cfg.Name, d.Round(time.Second)))
		}
	}
	return stuck
}

// Status is a one-line summary of the running agent, for a service manager's status line:
// how many inputs and outputs run, how many metrics the outputs hold, and how many they
// have written and dropped.
func (a *Agent) Status() string {
	inputs := len(a.state.Load().inputs)
	outs := a.Outputs()
	var buffered int
	var written, dropped int64
	for _, o := range outs {
		buffered += o.Stats.BufferSize
		written += o.Stats.Written
		dropped += o.Stats.Dropped
	}
	return fmt.Sprintf("%d inputs, %d outputs; %d metrics buffered, %d written, %d dropped",
		inputs, len(outs), buffered, written, dropped)
}

// Failing names the outputs whose writes, connects included, have failed and been retried
// for longer than longer at now: outputs backing off from a sink that is down or refuses
// them. Unlike Stuck this is no fault of the agent's, but a reader of its health, such as
// outputs.health, may want to know that metrics are piling up rather than being written.
func (a *Agent) Failing(now time.Time, longer time.Duration) []string {
	var failing []string
	for _, ro := range a.state.Load().outputs {
		if ro.w == nil {
			continue
		}
		since := ro.w.Stats().FailingSince
		if d := now.Sub(since); !since.IsZero() && d > longer {
			failing = append(failing, fmt.Sprintf("%s (failing for %s)", ro.label(), d.Round(time.Second)))
		}
	}
	return failing
}

// Filling names the outputs whose buffers hold more than fill of their limit (a fraction:
// 0.9 is 90% of buffer_limit), and so are near evicting.
func (a *Agent) Filling(fill float64) []string {
	var filling []string
	for _, ro := range a.state.Load().outputs {
		if ro.w == nil {
			continue
		}
		st := ro.w.Stats()
		if st.BufferLimit > 0 && float64(st.BufferSize) > fill*float64(st.BufferLimit) {
			filling = append(filling, fmt.Sprintf("%s (buffer holds %d of %d metrics)", ro.label(), st.BufferSize, st.BufferLimit))
		}
	}
	return filling
}
