package batch

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
)

// DropEvent reports metrics lost for good, or whose delivery is unknown. Every loss a Writer
// counts in metrics_dropped is reported in exactly one event, so the sum of Count over all
// events equals the counter.
type DropEvent struct {
	Output string // Options.Alias, or Options.Name when there is none
	// Reason is morse.ReasonBufferFull, morse.ReasonShutdown, the sink's reason, or
	// morse.ReasonUnknown for a batch sent with no answer when shutdown cancelled its write:
	// the sink may have stored it.
	Reason string
	Count  int // how many metrics were lost or, under morse.ReasonUnknown, are unknown
	// Metrics are the metrics lost, oldest first, when they are known. For a partial write
	// whose sink said how many it dropped but not which (Partial is true), they are the
	// whole batch that the Count lost metrics were among. An eviction's metrics are known
	// only when the writer has an OnDrop hook.
	Metrics []morse.Metric
	// Partial marks a partial write whose sink did not say which metrics it dropped.
	Partial bool
	// Err is the error that lost them: the sink's answer, or nil for an eviction.
	Err error
}

// Metrics may be reused once OnDrop returns: a hook that keeps them must copy the slice.

// dropper books every loss in one place: the counters, the OnDrop hook and a throttled log
// line, so that the three can never disagree.
type dropper struct {
	output     string
	stats      *outputStats
	hook       func(DropEvent)
	deadLetter DeadLetter
	log        *slog.Logger

	mu      sync.Mutex
	refused *throttle.Throttle // "dropped for good" log lines
	dlErrs  *throttle.Throttle // dead-letter write failures
}

func newDropper(output string, stats *outputStats, hook func(DropEvent), log *slog.Logger) *dropper {
	return &dropper{output: output, stats: stats, hook: hook, log: log,
		refused: throttle.New(10 * time.Second), dlErrs: throttle.New(time.Minute)}
}

// lose counts n metrics lost for reason and reports them.
func (d *dropper) lose(ev DropEvent) { d.drop(ev, true) }

// drop reports a loss; with keep, it also goes to the dead letter, if any.
func (d *dropper) drop(ev DropEvent, keep bool) {
	if ev.Count <= 0 {
		return
	}
	ev.Output = d.output
	d.stats.drop(ev.Reason, ev.Count)
	if ev.Err != nil {
		d.mu.Lock()
		ok, suppressed := d.refused.Allow(time.Now())
		d.mu.Unlock()
		if ok {
			d.log.Error("metrics dropped for good", "reason", ev.Reason, "metrics", ev.Count, "error", ev.Err,
				throttle.SuppressedKey, suppressed)
		}
	}
	if keep && d.deadLetter != nil {
		d.keep(ev)
	}
	if d.hook != nil {
		d.hook(ev)
	}
}

// keep hands ev to the dead letter and counts, by metric, what it could not keep and what
// its bound removed, so that every dropped metric is in the file or in a counter.
func (d *dropper) keep(ev DropEvent) {
	res, err := d.deadLetter.Write(ev)
	d.stats.deadLettered(res)
	if err != nil {
		d.dlErrs.Log(d.log, slog.LevelError, "dead letter: could not keep every dropped metric",
			"reason", ev.Reason, "metrics", len(ev.Metrics), "not_kept", res.Failed, "error", err)
	}
}

// evicted is the Eviction report of the writer's buffer. Evictions are logged once per
// flush by the flush loop (reportEvictions), never per metric.
func (d *dropper) evicted(reason string, n int, ms []morse.Metric) {
	d.stats.drop(reason, n)
	if d.hook != nil {
		d.hook(DropEvent{Output: d.output, Reason: reason, Count: n, Metrics: ms})
	}
}

// settled books a write that is final and returns how many metrics it stored: all, for
// success; the written part of a partial write; none for a permanent error.
func (d *dropper) settled(batch []morse.Metric, err error) (written int) {
	switch morse.Classify(err) {
	case morse.OutcomeWritten:
		return len(batch)
	case morse.OutcomePartial:
		pw := asPartial(err)
		written, dropped := pw.Split(len(batch))
		d.partial(batch, pw, dropped, err)
		return written
	default:
		d.lose(DropEvent{Reason: reasonOr(permanentReason(err)), Count: len(batch), Metrics: batch, Err: err})
		return 0
	}
}

func asPartial(err error) *morse.PartialWriteError {
	var pw *morse.PartialWriteError
	errors.As(err, &pw)
	return pw
}

// permanentReason is the reason of the permanent error in err's chain, if any.
func permanentReason(err error) string {
	var pe *morse.PermanentError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ""
}

// partial reports the drops of a partial write, one event per reason. A part that lists its
// positions reports exactly those metrics; one that gives only a count reports the batch
// they were among, marked partial. Metrics the sink neither stored nor accounted for go to
// the first reason.
func (d *dropper) partial(batch []morse.Metric, pw *morse.PartialWriteError, dropped int, err error) {
	parts := append([]*morse.PartialWriteError{pw}, pw.More...)
	counted := 0
	for i, part := range parts {
		ev := DropEvent{Reason: reasonOr(part.Reason), Err: err}
		if part.Err != nil && len(parts) > 1 {
			ev.Err = part.Err
		}
		if len(part.Indices) > 0 {
			ev.Metrics = pick(batch, part.Indices)
			ev.Count = len(ev.Metrics)
		} else {
			ev.Count, ev.Metrics, ev.Partial = max(part.Dropped, 0), batch, true
		}
		if i == len(parts)-1 { // the last part takes what the counts left over, so they add up
			ev.Count = dropped - counted
		}
		ev.Count = min(ev.Count, dropped-counted)
		counted += ev.Count
		d.lose(ev)
	}
}

// pick returns the metrics of batch at the given positions, ignoring any out of range.
func pick(batch []morse.Metric, idx []int) []morse.Metric {
	out := make([]morse.Metric, 0, len(idx))
	for _, i := range idx {
		if i >= 0 && i < len(batch) {
			out = append(out, batch[i])
		}
	}
	return out
}

func reasonOr(r string) string {
	if r == "" {
		return morse.ReasonPermanent
	}
	return r
}
