package questdb

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// setupHTTP builds the client for ILP over HTTP; o.mu is held.
func (o *QuestDB) setupHTTP(s settings, tlsCfg *tls.Config) error {
	tr, err := httpout.NewTransport(httpout.Options{TLS: tlsCfg})
	if err != nil {
		return err
	}
	tr.MaxIdleConnsPerHost = 8 // enough for the concurrent writes and their tables
	o.client = &http.Client{Transport: tr}
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	o.url = scheme + "://" + s.addr + "/write"
	return nil
}

// tlsConfig is the TLS of https and tcps: the tls_* options, with the configuration
// string's tls_verify and tls_roots on top. Nil when the protocol has no TLS.
func (o *QuestDB) tlsConfig(s settings) (*tls.Config, error) {
	if !s.tls {
		if o.Config.Configured() {
			return nil, morse.Errorf("protocol", "tls_* options need protocol \"https\" or \"tcps\"")
		}
		return nil, nil
	}
	cfg, err := o.Config.TLSConfig()
	if err != nil {
		return nil, err
	}
	if cfg == nil { // no tls_* option: Go's verified defaults, at least TLS 1.2
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	cfg.InsecureSkipVerify = cfg.InsecureSkipVerify || s.tlsInsecure
	if s.tlsRoots != "" {
		pool, err := tlsclient.LoadCAs(s.tlsRoots)
		if err != nil {
			return nil, morse.Errorf("conf", "tls_roots: %w", err)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// writeHTTP sends the batch as one request per table, in the order the tables first appear.
//
// When a table's request fails with a retryable error, the whole batch is retried, and the
// tables already written are written again: QuestDB stores such rows twice unless the table
// has deduplication on (DEDUP UPSERT KEYS on the timestamp and the tag columns).
func (o *QuestDB) writeHTTP(ctx context.Context, s *scratch, batch []morse.Metric) error {
	for _, g := range s.groupByTable(batch) {
		s.text, s.lines = s.text[:0], s.lines[:0]
		o.serialize(s, batch, g.Positions, nil)
		if err := o.writeLines(ctx, s, batch, s.lines); err != nil {
			return err
		}
	}
	return result(len(batch), s.dropped)
}

// writeLines sends lines of one table as one request. A line that QuestDB names as bad is
// recorded as dropped and the request is sent again without it; a cast error also takes out
// every other line that writes the same type to the same column, since it would fail the
// same way. A request too large for the server is sent in halves. Only a retryable error
// is returned: every other outcome is recorded in s.dropped.
func (o *QuestDB) writeLines(ctx context.Context, s *scratch, batch []morse.Metric, lines []line) error {
	for len(lines) > 0 {
		ans, err := o.post(ctx, s.bodyOf(lines))
		if err != nil {
			return err
		}
		switch v := ans.verdict(); {
		case v.ok:
			return nil
		case v.retry:
			return morse.Retryable(ans, ans.retryAfter)
		case v.tooLarge && len(lines) > 1:
			h := len(lines) / 2
			o.logger().Debug("QuestDB refused the request as too large; sending it in halves", "lines", len(lines))
			if err := o.writeLines(ctx, s, batch, lines[:h]); err != nil {
				return err
			}
			return o.writeLines(ctx, s, batch, lines[h:])
		case v.line > 0 && v.line <= len(lines):
			lines = o.takeOut(s, batch, lines, v, ans)
		default:
			// Refused as a whole, for a reason that no one line is named for.
			for _, l := range lines {
				s.drop(l.idx, &LineError{Reason: v.reason, Err: ans})
			}
			return nil
		}
	}
	return nil
}

// takeOut drops the line that QuestDB named and, for a cast error, every line that would
// fail the same way. It filters lines in place and returns what is left.
func (o *QuestDB) takeOut(s *scratch, batch []morse.Metric, lines []line, v verdict, ans *ServerError) []line {
	bad := lines[v.line-1].idx
	kept := lines[:0]
	for _, l := range lines {
		if l.idx == bad || v.column != "" && hasFieldOfType(batch[l.idx], v.column, v.fromType) {
			s.drop(l.idx, &LineError{Reason: v.reason, Err: ans})
			continue
		}
		kept = append(kept, l)
	}
	return kept
}

// post sends one request body to /write and reads the answer (httpout.Send). The error is
// for a request that got no answer: always retryable.
func (o *QuestDB) post(ctx context.Context, body []byte) (*ServerError, error) {
	timeout := o.set.timeout // positive: setup sees to it
	if o.set.minThroughput > 0 {
		timeout += time.Duration(len(body)) * time.Second / time.Duration(o.set.minThroughput)
	}
	ans, err := httpout.Send(ctx, o.client, o.url, body, timeout, o.setHeaders, func(resp *http.Response) *ServerError {
		return readAnswer(o.url, resp)
	})
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return nil, fmt.Errorf("questdb %s: %w", o.url, err)
		}
		return nil, morse.Retryable(fmt.Errorf("questdb %s: %w", o.url, err), 0)
	}
	return ans, nil
}

// setHeaders sets the body's type, the user agent and the credentials: basic auth, or a
// bearer token.
func (o *QuestDB) setHeaders(req *http.Request) {
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if o.UserAgent != "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	httpout.Auth{Username: o.set.username, Password: morse.Secret(o.set.password), Scheme: "Bearer", Token: morse.Secret(o.set.token)}.Set(req)
}
