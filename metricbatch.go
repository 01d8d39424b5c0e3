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
