package influxdb

import (
	"context"
	"errors"
	"time"

	"github.com/morse-agent/morse/influxquery"
)

// ensureDatabase creates db on the first URL that answers and reports whether it now
// exists. A failure is logged and otherwise ignored: the database may exist already, and a
// user without the right to create databases may still write.
func (o *InfluxDB) ensureDatabase(ctx context.Context, db string) bool {
	o.dbMu.Lock()
	o.created[db] = true // attempted: a tag-routed database is not tried before every write
	o.dbMu.Unlock()
	// The first URL that answers decides: another URL of the same cluster would say the same.
	var answered error
	idx, failed := o.failover.Do(ctx, len(o.targets), func(i int) error {
		answered = o.createDatabase(ctx, o.targets[i], db)
		if _, ok := errors.AsType[*ServerError](answered); ok || answered == nil {
			return nil
		}
		return answered
	})
	if idx >= 0 && answered == nil {
		return true
	}
	errs := []error{failed}
	if idx >= 0 {
		errs = append(errs, answered)
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
