package agent

import "time"

// offset is how far past its mark (the interval's multiple with round_interval, the start
// without) each gather of the input runs: its own collection_offset, or else the agent's,
// as Telegraf's ticker adds it once to the first mark and so to every later one.
func (ri *runningInput) offset() time.Duration {
	if o := ri.cfg.Common.CollectionOffset; o != 0 {
		return time.Duration(o)
	}
	return ri.agent.state.Load().offset
}
