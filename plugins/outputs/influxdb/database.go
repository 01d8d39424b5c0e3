package influxdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
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

// createDatabase runs CREATE DATABASE, which succeeds when the database exists already.
func (o *InfluxDB) createDatabase(ctx context.Context, t target, db string) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeoutOf(o.Timeout))
		defer cancel()
	}
	form := url.Values{"q": {"CREATE DATABASE " + quoteIdent(db)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base.JoinPath("query").String(),
		strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	o.setHeaders(req)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		a := readAnswer(resp.StatusCode, resp.Header, resp.Body, maxMessage)
		return &ServerError{StatusCode: a.status, Message: a.msg, URL: redactURL(req.URL)}
	}
	var out struct {
		Error   string `json:"error"`
		Results []struct {
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMessage)).Decode(&out); err != nil {
		return fmt.Errorf("influxdb: CREATE DATABASE: unreadable answer: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMessage))
	msg := out.Error
	for _, r := range out.Results {
		msg += r.Error
	}
	if msg != "" {
		return &ServerError{StatusCode: resp.StatusCode, Message: msg, URL: redactURL(req.URL)}
	}
	return nil
}

// quoteIdent quotes an InfluxQL identifier.
func quoteIdent(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
