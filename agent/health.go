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
