package morse

// BatchAccumulator is implemented by the agent's accumulators. A listener that parses many
// metrics per read hands them over together: each output's buffer then takes its lock and
// updates its counters once per batch instead of once per metric, which cost a UDP listener
// flooded with small datagrams a tenth of its time.
type BatchAccumulator interface {
	Accumulator
	// AddMetrics adds the metrics of ms in order, as AddMetric would one by one. It may
	// overwrite ms, and keeps no reference to it after it returns.
	AddMetrics(ms []Metric)
}

// AddMetrics implements BatchAccumulator.
func (acc *accumulator) AddMetrics(ms []Metric) {
	st := acc.in.agent.state.Load()
	kept := ms[:0]
	for _, m := range ms {
		if m, ok := acc.in.process(m, st); ok {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return
	}
	acc.in.gathered.Add(int64(len(kept)))
	acc.in.agent.gathered.Add(int64(len(kept)))
	if acc.toOutputs {
		acc.in.fanOutBatch(kept, st)
		return
	}
	for _, m := range kept {
		acc.emit(m)
	}
}

// fanOutBatch hands ms to every output of st, in one write per output where it can.
func (ri *runningInput) fanOutBatch(ms []Metric, st *agentState) {
	for _, ro := range st.outputs {
		ro.addBatch(ms)
	}
}

// addBatch buffers ms as add would each of them. Metrics that this output's filter must
// judge, or that it must expand, take add's way one by one, so that ms is never changed.
func (ro *runningOutput) addBatch(ms []Metric) {
	if ro.cfg.Filter != nil || !ro.writesLines() {
		for _, m := range ms {
			ro.add(m)
		}
		return
	}
	_ = ro.w.WriteBatch(ms) // ErrClosed during a reload's hand-over is already counted
}

// MetricBatch gathers the metrics of one read for an accumulator, and adds them in one
// call when it takes batches (BatchAccumulator), or one by one as they come otherwise. The
// owner calls Flush when the read is parsed, so no metric waits for the next read.
type MetricBatch struct {
	acc   Accumulator
	batch BatchAccumulator
	ms    []Metric
}

// NewMetricBatch returns a batch of up to size metrics for acc.
func NewMetricBatch(acc Accumulator, size int) *MetricBatch {
	b := &MetricBatch{acc: acc}
	if ba, ok := acc.(BatchAccumulator); ok && size > 1 {
		b.batch, b.ms = ba, make([]Metric, 0, size)
	}
	return b
}

// Add adds m to the batch, and the batch to the accumulator when it is full.
func (b *MetricBatch) Add(m Metric) {
	if b.batch == nil {
		b.acc.AddMetric(m)
		return
	}
	b.ms = append(b.ms, m)
	if len(b.ms) == cap(b.ms) {
		b.Flush()
	}
}

// Flush adds what the batch holds to the accumulator. It clears the slots, so that the
// batch pins no metric's memory once the outputs have taken them.
func (b *MetricBatch) Flush() {
	if len(b.ms) == 0 {
		return
	}
	b.batch.AddMetrics(b.ms)
	clear(b.ms)
	b.ms = b.ms[:0]
}
