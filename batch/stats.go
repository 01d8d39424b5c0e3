package batch

import (
	"maps"
	"sync"
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
	added, written, dropped, filtered *selfstat.Counter
	writeErrors, writeTimeNs          *selfstat.Counter
	bufferFull                        *selfstat.Counter // the one reason on the hot path, kept at hand
	// totals, when set, add this output's counts to the agent's (internal_agent).
	totals *Totals

	mu       sync.Mutex
	byReason map[string]*selfstat.Series
}

func newOutputStats(reg *selfstat.Registry, tags map[string]string) *outputStats {
	if reg == nil {
		reg = selfstat.New()
	}
	series := reg.NewSeries(measurementWrite, tags)
	c := series.Counter
	s := &outputStats{
		reg: reg, tags: maps.Clone(tags), series: series,
		bufferSize: c("buffer_size"), bufferLimit: c("buffer_limit"),
		bufferBytes: c("buffer_bytes"), bufferAge: c("buffer_oldest_age_ns"),
		added: c("metrics_added"), written: c("metrics_written"),
		dropped: c("metrics_dropped"), filtered: c("metrics_filtered"),
		writeErrors: c("errors"), writeTimeNs: c("write_time_ns"),
		byReason: map[string]*selfstat.Series{},
	}
	// Telegraf names the failed-write count "errors"; DESIGN.md calls it write_errors. Both
	// names report the one counter, so neither kind of dashboard breaks.
	series.Alias("write_errors", s.writeErrors)
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
	if s.totals != nil && s.totals.Dropped != nil {
		s.totals.Dropped.Add(int64(n))
	}
	if reason == morse.ReasonBufferFull {
		s.bufferFull.Add(int64(n))
		return
	}
	s.reasonCounter(reason).Add(int64(n))
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

// Totals are counters that several writers add to, such as the agent's own
// internal_agent metrics_written and metrics_dropped.
type Totals struct {
	Written, Dropped *selfstat.Counter
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
}

func (s *outputStats) snapshot() Stats {
	st := Stats{
		BufferBytes: s.bufferBytes.Get(), BufferOldestAge: time.Duration(s.bufferAge.Get()),
		Added: s.added.Get(), Written: s.written.Get(), Dropped: s.dropped.Get(),
		Filtered: s.filtered.Get(), WriteErrors: s.writeErrors.Get(),
		BufferLimit: int(s.bufferLimit.Get()), DroppedByReason: map[string]int64{},
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
