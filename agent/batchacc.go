package agent

import "github.com/morse-agent/morse"

// AddMetrics implements BatchAccumulator.
func (acc *accumulator) AddMetrics(ms []morse.Metric) {
	st := acc.in.agent.state.Load()
	kept := ms[:0]
	precision := acc.precision(st)
	for _, m := range ms {
		if m, ok := acc.process(m, st, precision); ok {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return
	}
	acc.in.gathered.Add(int64(len(kept)))
	acc.in.agent.gathered.Add(int64(len(kept)))
	if st.stage != nil {
		kept = st.stage.run(kept)
	}
	if acc.toOutputs {
		acc.in.fanOutBatch(kept, st)
		return
	}
	for _, m := range kept {
		acc.emit(m)
	}
}

// fanOutBatch hands ms to every output of st, in one write per output where it can.
func (ri *runningInput) fanOutBatch(ms []morse.Metric, st *agentState) {
	fs := ri.fedFor(st)
	for i, ro := range st.outputs {
		if ro.addBatch(ms) {
			fs.mark(i)
		}
	}
}

// addBatch buffers ms as add would each of them, and reports whether it buffered any.
// Metrics that this output's filter must judge, or that it must expand, go through
// addFiltered, so that ms is never changed.
func (ro *runningOutput) addBatch(ms []morse.Metric) bool {
	if ro.cfg.Filter != nil || !ro.writesLines() {
		return ro.addFiltered(ms) > 0
	}
	_ = ro.w.WriteBatch(ms) // ErrClosed during a reload's hand-over is already counted
	return len(ms) > 0
}
