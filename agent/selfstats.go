package agent

import (
	"strconv"

	"github.com/morse-agent/morse/selfstat"
)

// agentStats are the internal_agent counters, named as Telegraf names them
// (models/running_input.go, running_output.go, buffer.go): the sums over every input and
// output, kept even when a reload removes the plugin that counted.
type agentStats struct {
	gathered, gatherErrors, gatherTimeouts *selfstat.Counter
	written, dropped, rejected, writeErrs  *selfstat.Counter
}

func newAgentStats(reg *selfstat.Registry) agentStats {
	c := func(field string) *selfstat.Counter { return reg.Counter("internal_agent", nil, field) }
	// Created in Telegraf's field order, so that internal_agent lists them so.
	return agentStats{
		gatherErrors: c("gather_errors"), gatherTimeouts: c("gather_timeouts"),
		dropped: c("metrics_dropped"), gathered: c("metrics_gathered"),
		rejected: c("metrics_rejected"), written: c("metrics_written"), writeErrs: c("write_errors"),
	}
}

// instanceID is the "_id" tag of a plugin's self-metrics, which inputs.internal shows with
// per_instance. Telegraf hashes the plugin's table; the fingerprint is such a hash, so equal
// tables share an ID there as here. A plugin built in code has no table, and gets its kind,
// name and place instead.
func instanceID(kind, name, fingerprint string, place int) string {
	if fingerprint != "" {
		return fingerprint
	}
	return kind + "." + name + "#" + strconv.Itoa(place)
}

// countGathers makes the input's internal_gather counters, in Telegraf's field order, and
// ties those that internal_agent sums to the agent's.
func (ri *runningInput) countGathers() {
	s := ri.series
	ri.errs = s.Counter("errors")
	ri.gatherErrs = s.Counter("gather_errors")
	ri.gatherTime = s.Timing("gather_time_ns")
	ri.timeouts = s.Counter("gather_timeouts")
	ri.gathered = s.Counter("metrics_gathered")
	ri.startupErrs = s.Counter("startup_errors")
	ri.gatherErrs.Tee(ri.agent.gatherErrors)
	ri.timeouts.Tee(ri.agent.gatherTimeouts)
}

// nextPlace numbers the plugins the agent sets up, for instanceID.
func (a *Agent) nextPlace() int { return int(a.places.Add(1)) }
