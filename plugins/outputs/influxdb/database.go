package influxdb

import (
	"context"
	"errors"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/influxquery"
)

// ensureDatabase creates db on the first URL that answers and reports whether it now
// exists. A failure is logged and otherwise ignored: the database may exist already, and a
// user without the right to create databases may still write.
func (o *InfluxDB) ensureDatabase(ctx context.Context, db string) bool {
	o.dbMu.Lock()
	o.created[db] = true // attempted: a tag-routed database is not tried before every write
	o.dbMu.Unlock()
	var errs []error
	current := int(o.current.Load())
	for i := range o.targets {
		t := o.targets[(current+i)%len(o.targets)]
		err := o.createDatabase(ctx, t, db)
		if err == nil {
			return true
		}
		errs = append(errs, err)
		var serr *ServerError
		if errors.As(err, &serr) || ctx.Err() != nil {
			break // the server answered: another URL of the same cluster would say the same
		}
	}
	// A database that cannot be created may be tried before every batch (see writeSplit):
	// one warning a minute says it all.
	o.dbMu.Lock()
	now := time.Now()
	warn := now.Sub(o.warned[db]) >= time.Minute
	if warn {
		o.warned[db] = now
	}
	o.dbMu.Unlock()
	if warn {
		o.logger().Warn("database creation failed; writes will tell whether it exists",
			"database", db, "error", errors.Join(errs...))
	}
	return false
}

// createDatabase runs CREATE DATABASE, which succeeds when the database exists already. A
// refusal or a failed statement is a *ServerError, as the answers to writes are.
func (o *InfluxDB) createDatabase(ctx context.Context, t target, db string) error {
	_, err := t.query.Query(ctx, "CREATE DATABASE "+influxquery.QuoteIdent(db))
	var qe *influxquery.QueryError
	if errors.As(err, &qe) {
		return &ServerError{StatusCode: qe.StatusCode, Message: qe.Message, URL: t.queryURL}
	}
	return err
}

// tally adds up the outcomes of the requests that make up one batch: the groups of a routed
// batch, the halves of a split one, the metrics the serializer refused beside the server's
// answer for the rest.
type tally struct {
	dropped  int
	errs     []error
	byReason map[string]int
	whole    error // the only error, when it covered its whole piece
	pieceN   int
	// indices are the batch positions of the metrics dropped, while every drop was of a
	// whole piece whose positions are known (addAt); inexact is set once one was not.
	indices []int
	inexact bool
}

// addAt books the outcome of the piece of the batch at positions idx. A piece refused as a
// whole, such as a routed request to a missing database, drops exactly those metrics; a
// partial write within the piece does not say which.
func (t *tally) addAt(err error, idx []int) {
	switch morse.Classify(err) {
	case morse.OutcomeDropped:
		t.indices = append(t.indices, idx...)
	case morse.OutcomePartial:
		t.inexact = true
	}
	t.add(err, len(idx))
}

// add books the outcome of one piece of n metrics: nil, partial or permanent.
func (t *tally) add(err error, n int) {
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

// leaves unwraps the errors that tally made, so that a batch split several times does not
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

// err is the outcome of the whole batch of n metrics. A single error that covered the whole
// batch is returned as it is; otherwise the drops are summed into one partial write, counted
// under the reason that dropped the most (the agent counts one reason per write).
func (t *tally) err(n int) error {
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
	pw := &morse.PartialWriteError{Dropped: min(t.dropped, n), Reason: reason, Err: errors.Join(t.errs...)}
	if !t.inexact && len(t.indices) == pw.Dropped {
		pw.Indices = t.indices
	}
	return pw
}
