// Package tally adds up the outcomes of the pieces of one batch: an output that splits a
// batch into several requests (one per database or bucket, or halves of a request the
// server found too large) reports one result for the batch, with exact counts.
package tally

import (
	"errors"

	"github.com/morse-agent/morse"
)

// Tally books the outcome of each piece. The zero value is ready. A retryable outcome is
// never booked: the caller returns it for the whole batch at once.
type Tally struct {
	dropped  int
	errs     []error
	byReason map[string]int
	whole    error // the only error, when it covered its whole piece
	pieceN   int
}

// Add books the outcome of one piece of n metrics: nil, a partial write or a permanent
// error. A retryable error is ignored.
func (t *Tally) Add(err error, n int) {
	if err == nil || n == 0 {
		return
	}
	var dropped int
	var reason string
	switch morse.Classify(err) {
	case morse.OutcomePartial:
		var pw *morse.PartialWriteError
		errors.As(err, &pw)
		dropped, reason = min(pw.Dropped, n), pw.Reason
	case morse.OutcomeDropped:
		var pe *morse.PermanentError
		errors.As(err, &pe)
		dropped, reason = n, pe.Reason
	default:
		return
	}
	if t.byReason == nil {
		t.byReason = map[string]int{}
	}
	t.byReason[reason] += dropped
	t.dropped += dropped
	t.errs = append(t.errs, leaves(err)...)
	t.whole, t.pieceN = err, n
}

// Dropped is the number of metrics booked as dropped so far.
func (t *Tally) Dropped() int { return t.dropped }

// leaves unwraps the errors that a tally made, so that a batch split several times does not
// read "partial write: partial write: ...".
func leaves(err error) []error {
	var pw *morse.PartialWriteError
	if errors.As(err, &pw) && pw.Err != nil {
		if joined, ok := pw.Err.(interface{ Unwrap() []error }); ok {
			return joined.Unwrap()
		}
	}
	return []error{err}
}

// Err is the outcome of the whole batch of n metrics. A single error that covered the whole
// batch is returned as it is; otherwise the drops are summed into one partial write, counted
// under the reason that dropped the most (the agent counts one reason per write), with the
// written metrics stated too.
func (t *Tally) Err(n int) error {
	switch {
	case t.dropped == 0:
		return nil
	case len(t.errs) == 1 && t.pieceN == n:
		return t.whole
	}
	reason, most := "", -1
	for r, c := range t.byReason {
		if c > most || (c == most && r < reason) {
			reason, most = r, c
		}
	}
	dropped := min(t.dropped, n)
	return &morse.PartialWriteError{Written: n - dropped, Dropped: dropped, Reason: reason, Err: errors.Join(t.errs...)}
}

// Each writes every piece with write, in order, and adds up the outcomes: a retryable
// outcome of any piece is returned at once, for the whole batch, as it is.
func Each(pieces [][]morse.Metric, write func([]morse.Metric) error) error {
	var t Tally
	n := 0
	for _, p := range pieces {
		err := write(p)
		if morse.Classify(err) == morse.OutcomeRetry {
			return err
		}
		t.Add(err, len(p))
		n += len(p)
	}
	return t.Err(n)
}

// Halves is Each for the two halves of metrics, for a server that refused them all at once.
func Halves(metrics []morse.Metric, write func([]morse.Metric) error) error {
	h := len(metrics) / 2
	return Each([][]morse.Metric{metrics[:h], metrics[h:]}, write)
}
