package selfstat

import "time"

// SerializerStats are the internal_serializer counters of one data format, with Telegraf's
// names (its models/running_serializer.go): every output that writes the format counts into
// the one series tagged type=<format>, as Telegraf's outputs share theirs. A nil
// *SerializerStats counts nothing, for outputs built in code without an agent.
type SerializerStats struct {
	errors, metrics, bytes, timeNs *Counter
}

// NewSerializerStats returns the counters of format in reg; nil, which counts nothing, for
// a nil reg.
func NewSerializerStats(reg *Registry, format string) *SerializerStats {
	if reg == nil {
		return nil
	}
	tags := map[string]string{"type": format}
	c := func(field string) *Counter { return reg.Counter("internal_serializer", tags, field) }
	// Created in Telegraf's order.
	return &SerializerStats{
		errors: c("errors"), metrics: c("metrics_serialized"),
		bytes: c("bytes_serialized"), timeNs: c("serialization_time_ns"),
	}
}

// Serialized counts one serialization of metrics into bytes that took took. Like Telegraf,
// it counts every metric handed over, written or not, and sums the time.
func (s *SerializerStats) Serialized(metrics, bytes int, took time.Duration) {
	if s == nil {
		return
	}
	s.metrics.Add(int64(metrics))
	s.bytes.Add(int64(bytes))
	s.timeNs.Add(took.Nanoseconds())
}

// Failed counts metrics that could not be serialized.
func (s *SerializerStats) Failed(n int) {
	if s == nil || n <= 0 {
		return
	}
	s.errors.Add(int64(n))
}
