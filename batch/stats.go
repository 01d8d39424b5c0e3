package batch

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// The self-metric measurements of an output, named as Telegraf names them so that existing
// dashboards keep working. Drops by reason are a measurement of their own, so that summing
// internal_write.metrics_dropped per output never counts a drop twice.
const (
	measurementWrite        = "internal_write"
	measurementWriteDropped = "internal_write_dropped"
)

// outputStats are the counters of one output. The hot path touches only atomics; the lock
// guards the lazily created per-reason counters.
type outputStats struct {
	reg    *selfstat.Registry
	tags   map[string]string
	series *selfstat.Series

	bufferSize, bufferLimit           *selfstat.Counter
	bufferBytes, bufferAge            *selfstat.Counter // of a buffer that knows them (BufferGauges)
	memFallback                       *selfstat.Counter // buffer_memory_fallback, of a disk buffer; nil otherwise
	added, written, dropped, filtered *selfstat.Counter
	rejected                          *selfstat.Counter // the part of dropped the sink refused
	writeErrors, writeTimeNs          *selfstat.Counter
	bufferFull                        *selfstat.Counter // the one reason on the hot path, kept at hand
	// deadLetterFailed and deadLetterRemoved count, by metric, the dropped metrics that the
	// dead letter could not keep and the ones its bound removed; nil without a dead letter,
	// so that an output without one reports Telegraf's fields alone.
	deadLetterFailed, deadLetterRemoved *selfstat.Counter
	// totals, when set, add this output's counts to the agent's (internal_agent).
	totals *Totals
	// failingSince is when the writes of the current run of failures to be retried began
	// to fail, in Unix nanoseconds; 0 while the last write succeeded (Stats.FailingSince).
	failingSince atomic.Int64

	mu       sync.Mutex
	byReason map[string]*selfstat.Series
}

func newOutputStats(reg *selfstat.Registry, tags map[string]string) *outputStats {
	if reg == nil {
		reg = selfstat.New()
	}
	series := reg.NewSeries(measurementWrite, tags)
	c := series.Counter
	// Created in Telegraf's field order (its README's), then morse's own gauges.
	s := &outputStats{
		reg: reg, tags: maps.Clone(tags), series: series,
		bufferLimit: c("buffer_limit"), bufferSize: c("buffer_size"),
		writeErrors: c("errors"),
		added:       c("metrics_added"), dropped: c("metrics_dropped"), filtered: c("metrics_filtered"),
		rejected: c("metrics_rejected"), written: c("metrics_written"),
		byReason: map[string]*selfstat.Series{},
	}
	c("startup_errors") // an output connects in the background and never fails to start
	// Telegraf's "errors" counts the errors its output logged, and write_errors the failed
	// writes; here an output's errors are its failed writes, so both names report the one
	// counter and neither kind of dashboard breaks.
	series.Alias("write_errors", s.writeErrors)
	s.writeTimeNs = series.Timing("write_time_ns")
	s.bufferBytes, s.bufferAge = c("buffer_bytes"), c("buffer_oldest_age_ns")
	s.bufferFull = s.reasonCounter(morse.ReasonBufferFull)
	return s
}

func (s *outputStats) reasonCounter(reason string) *selfstat.Counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs, ok := s.byReason[reason]
	if !ok {
		tags := maps.Clone(s.tags)
		tags["reason"] = reason
		rs = s.reg.NewSeries(measurementWriteDropped, tags)
		s.byReason[reason] = rs
	}
	return rs.Counter("metrics_dropped")
}

// drop counts n metrics lost for reason.
func (s *outputStats) drop(reason string, n int) {
	if n <= 0 {
		return
	}
	s.dropped.Add(int64(n))
	if sinkRefused(reason) {
		s.rejected.Add(int64(n))
	}
	if s.totals != nil && s.totals.Dropped != nil {
		s.totals.Dropped.Add(int64(n))
	}
	if reason == morse.ReasonBufferFull {
		s.bufferFull.Add(int64(n))
		return
	}
	s.reasonCounter(reason).Add(int64(n))
}

// withDeadLetter adds the dead letter's counters, dead_letter_failed and
// dead_letter_removed, to internal_write.
func (s *outputStats) withDeadLetter() {
	s.deadLetterFailed = s.series.Counter("dead_letter_failed")
	s.deadLetterRemoved = s.series.Counter("dead_letter_removed")
}

// deadLettered counts what the dead letter did with one event.
func (s *outputStats) deadLettered(r DeadLetterResult) {
	if s.deadLetterFailed == nil {
		return
	}
	s.deadLetterFailed.Add(int64(r.Failed))
	s.deadLetterRemoved.Add(r.Removed)
}

// wrote counts n metrics that the sink stored.
func (s *outputStats) wrote(n int) {
	s.written.Add(int64(n))
	if s.totals != nil && s.totals.Written != nil {
		s.totals.Written.Add(int64(n))
	}
}

// unregister removes the output's series, for an output that a reload took away.
func (s *outputStats) unregister() {
	s.reg.Remove(s.series)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range s.byReason {
		s.reg.Remove(rs)
	}
}

// sinkRefused reports whether metrics dropped for reason were refused on their way into the
// sink (by the sink, or by the serializer before it), which Telegraf counts as
// metrics_rejected. The others the buffer gave up: evicted, too old, corrupt on disk, left
// at shutdown or retried past retry_max_age. Unlike Telegraf, morse counts rejected metrics
// in metrics_dropped too, which is every metric lost, so that one counter says whether
// anything was.
func sinkRefused(reason string) bool {
	switch reason {
	case morse.ReasonBufferFull, morse.ReasonBufferBytes, morse.ReasonTooOld,
		morse.ReasonCorrupt, morse.ReasonShutdown, morse.ReasonUnknown, morse.ReasonRetryExpired:
		return false
	}
	return true
}

// Totals are counters that several writers add to: the agent's own internal_agent
// metrics_written, metrics_dropped, metrics_rejected and write_errors. A nil one is left out.
type Totals struct {
	Written, Dropped, Rejected, WriteErrors *selfstat.Counter
}

// setTotals ties the output's counters to the agent's totals.
func (s *outputStats) setTotals(t *Totals) {
	s.totals = t
	if t == nil {
		return
	}
	if t.Rejected != nil {
		s.rejected.Tee(t.Rejected)
	}
	if t.WriteErrors != nil {
		s.writeErrors.Tee(t.WriteErrors)
	}
}

// withID adds the "_id" tag when id is set.
func withID(tags map[string]string, id string) map[string]string {
	if id != "" {
		tags[selfstat.IDTag] = id
	}
	return tags
}

// Stats is a snapshot of a Writer's counters.
type Stats struct {
	Added           int64            // metrics handed to Write
	Written         int64            // metrics the sink stored
	Dropped         int64            // metrics lost, all reasons together
	DroppedByReason map[string]int64 // metrics lost, by reason
	Filtered        int64            // metrics an output's filter rejected
	WriteErrors     int64            // failed writes, retried or not
	BufferSize      int              // metrics waiting, not counting a batch in flight
	BufferLimit     int
	BufferBytes     int64         // bytes the buffer holds, for a buffer that knows (BufferGauges)
	BufferOldestAge time.Duration // how long the oldest metric has waited, likewise
	// BufferMemoryFallback is how many metrics a disk buffer holds in memory because its
	// disk refused them: a crash would lose them. 0 for other buffers.
	BufferMemoryFallback int64
	// DeadLetterFailed counts the dropped metrics the dead letter could not keep, and
	// DeadLetterRemoved the ones its bound removed from it since the writer started.
	DeadLetterFailed, DeadLetterRemoved int64
	// FailingSince is when the output's writes began to fail, connects included, for as
	// long as they fail and are retried: the writer is backing off. It is zero once a write
	// succeeds, and while none has failed.
	FailingSince time.Time
}

func (s *outputStats) snapshot() Stats {
	st := Stats{
		BufferBytes: s.bufferBytes.Get(), BufferOldestAge: time.Duration(s.bufferAge.Get()),
		Added: s.added.Get(), Written: s.written.Get(), Dropped: s.dropped.Get(),
		Filtered: s.filtered.Get(), WriteErrors: s.writeErrors.Get(),
		BufferLimit: int(s.bufferLimit.Get()), DroppedByReason: map[string]int64{},
	}
	if s.memFallback != nil {
		st.BufferMemoryFallback = s.memFallback.Get()
	}
	if s.deadLetterFailed != nil {
		st.DeadLetterFailed, st.DeadLetterRemoved = s.deadLetterFailed.Get(), s.deadLetterRemoved.Get()
	}
	if ns := s.failingSince.Load(); ns != 0 {
		st.FailingSince = time.Unix(0, ns)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, rs := range s.byReason {
		if v := rs.Counter("metrics_dropped").Get(); v > 0 {
			st.DroppedByReason[r] = v
		}
	}
	return st
}
