package agent

import (
	"cmp"
	"fmt"

	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/memlimit"
)

// bufferMemoryShare is the part of the process's memory limit that the memory buffers may
// hold together when [agent] buffer_memory_limit is not set: a quarter leaves the rest to the
// garbage collector's headroom (the heap may grow to twice what is live), the listeners'
// buffers, the bodies of writes in flight, and whatever else runs beside the agent.
const bufferMemoryShare = 4

// fallbackBufferMemory is the budget when the memory limit cannot be read at all.
const fallbackBufferMemory = 1 << 30

// memoryLimit is memlimit.Limit, replaced by tests.
var memoryLimit = memlimit.Limit

// bufferBudget is the budget of every output's memory buffer: [agent] buffer_memory_limit,
// or a share of the process's memory limit, and where it came from, for the log.
func bufferBudget(ac config.AgentConfig) (int64, string) {
	if ac.BufferMemoryLimit > 0 {
		return int64(ac.BufferMemoryLimit), "buffer_memory_limit"
	}
	limit, from, err := memoryLimit()
	if err != nil {
		return fallbackBufferMemory, "1 GiB, the memory limit unknown: " + err.Error()
	}
	return limit / bufferMemoryShare, fmt.Sprintf("a quarter of %s from %s", mib(limit), from)
}

// setBudget sizes the memory budget for cfg, creating it at the first load, and warns once
// if the byte bounds of the outputs' memory buffers add up to more than it.
func (a *Agent) setBudget(cfg *config.Config) {
	limit, from := bufferBudget(cfg.Agent)
	if a.budget == nil {
		a.budget = batch.NewMemoryBudget(limit)
	} else {
		a.budget.SetLimit(limit)
	}
	var sum int64
	n := 0
	for _, oc := range cfg.Outputs {
		bc := oc.Common.BufferConfig.Over(cfg.Agent.BufferConfig)
		if bc.Strategy == config.BufferDisk {
			continue
		}
		sum += cmp.Or(int64(bc.MaxBytes), batch.DefaultMaxBytes(oc.Settings().BufferLimit))
		n++
	}
	if sum > limit {
		a.log.Warn(fmt.Sprintf("[agent] the buffer_max_bytes of the %d outputs with a memory buffer add up to %s, "+
			"%s more than the budget of %s that they share (%s); past it the largest buffer "+
			"loses its oldest metrics, counted as buffer_bytes", n, mib(sum), mib(sum-limit), mib(limit), from))
	}
}

// mib writes n bytes in MiB, as the warnings and logs quote sizes.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
