package influxdb

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// routeKey is where a group of metrics goes.
type routeKey struct{ db, rp string }

// Write sends the batch, one request per database, retention policy and shard group (see
// writeByShardGroup), and returns nil, a *morse.PartialWriteError with the exact number of
// dropped metrics, an error wrapping a *morse.PermanentError, or a retryable error; see
// classify.
//
// When one request must be retried, the whole batch is, and the requests that had succeeded
// are sent again: InfluxDB stores a point with the same series and time once, so this only
// rewrites the same values.
//
// Write is safe for concurrent use: each call has buffers of its own, so the agent can keep
// several batches in flight to a sink whose round trip is long (see MaxConcurrentWrites).
func (o *InfluxDB) Write(ctx context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	if o.client == nil {
		if err := o.setup(); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	o.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	s := o.getScratch()
	defer o.putScratch(s)
	if o.DatabaseTag == "" && o.RetentionPolicyTag == "" {
		return o.writeTo(ctx, s, routeKey{o.Database, o.RetentionPolicy}, batch)
	}
	return httpout.Split(&s.groups, batch, o.routeOf, func(key routeKey, ms []morse.Metric) error {
		return o.writeTo(ctx, s, key, ms)
	})
}

// WriteTimeout bounds a write attempt by the timeout option, but never below the batch
// writer's default of 30 s (httpout.WriteTimeout): a write may take several requests, each
// bounded by timeout on its own (a URL that does not answer, then the next of urls; one per
// routed database; the database's creation; 413 halves).
func (o *InfluxDB) WriteTimeout() time.Duration { return httpout.WriteTimeout(timeoutOf(o.Timeout)) }

// concurrentWrites is how many batches the agent may have in flight to one InfluxDB output.
// One is enough when the server answers at once; a few hide a round trip of several
// milliseconds, which otherwise caps an output at one batch per round trip and makes a busy
// agent evict what it could have sent. InfluxDB does not care in which order batches arrive.
const concurrentWrites = 4

// MaxConcurrentWrites tells the agent that Write is safe for concurrent use, and how many
// writes may be in flight at once.
func (o *InfluxDB) MaxConcurrentWrites() int { return concurrentWrites }

// writeScratch is what one write in flight needs of its own: the request body, its gzip
// form, and the groups of a routed batch. It is reused through the output's free list.
type writeScratch struct {
	body   httpout.Body
	groups httpout.Groups[routeKey]
	shards httpout.Groups[int64] // one key's metrics by shard group, see writeByShardGroup
}

func (o *InfluxDB) getScratch() *writeScratch { return o.scratch.Get() }

// putScratch keeps s for a later write, unless its body grew too large to keep.
func (o *InfluxDB) putScratch(s *writeScratch) {
	if s.body.Keep() {
		o.scratch.Put(s)
	}
}

// routeOf is where m goes: the database and retention policy of its tags, else the
// configured ones.
func (o *InfluxDB) routeOf(m morse.Metric) routeKey {
	return routeKey{httpout.TagOr(m, o.DatabaseTag, o.Database), httpout.TagOr(m, o.RetentionPolicyTag, o.RetentionPolicy)}
}

// writeTo writes metrics to one database and retention policy. A database named by a tag is
// created before its first write, as the configured one is on Connect.
func (o *InfluxDB) writeTo(ctx context.Context, s *writeScratch, key routeKey, metrics []morse.Metric) error {
	if !o.SkipDatabaseCreation && key.db != o.Database && !o.wasCreated(key.db) {
		o.ensureDatabase(ctx, key.db)
	}
	return o.writeByShardGroup(ctx, s, key, metrics)
}

func (o *InfluxDB) wasCreated(db string) bool {
	o.dbMu.Lock()
	defer o.dbMu.Unlock()
	return o.created[db]
}

// writeSplit serializes and posts metrics. Two answers get a second chance here rather than
// in the agent: "database not found" creates the database and writes again once (it was
// dropped while we ran), and 413 splits the batch in halves until each fits, because the
// same request would never be accepted however often it were retried.
func (o *InfluxDB) writeSplit(ctx context.Context, s *writeScratch, key routeKey, metrics []morse.Metric, mayCreate bool) error {
	body, serDropped, serErr := o.serialize(s, metrics)
	if len(body) == 0 {
		return serErr // nothing could be serialized: a permanent error for the whole batch
	}
	lines := len(metrics) - serDropped
	plainLen := s.body.PlainLen()
	err := o.post(ctx, key, body, lines, plainLen)
	if err != nil {
		// A server or proxy may answer before it has read the body (401, 404, 413), and Go's
		// transport may then still be sending it from these buffers after post returns. Later
		// bodies (the halves, the next database, the next write) are built in new ones.
		s.body = httpout.Body{}
	}
	if mayCreate && !o.SkipDatabaseCreation && isReason(err, morse.ReasonDatabaseNotFound) {
		if o.ensureDatabase(ctx, key.db) {
			err = o.post(ctx, key, body, lines, plainLen) // the same bytes, only read again
		}
	}
	if errors.Is(err, httpout.ErrTooLarge) && len(metrics) > 1 {
		return o.writeHalves(ctx, s, key, metrics)
	}
	err = o.completeRetention(ctx, key, metrics, err, lines)
	if serDropped == 0 || morse.Classify(err) == morse.OutcomeRetry {
		return err
	}
	var t httpout.Tally
	t.Add(serErr, serDropped)
	t.Add(err, lines)
	return t.Err(len(metrics))
}

// writeHalves writes each half of metrics, for a server that refused them all as too large.
func (o *InfluxDB) writeHalves(ctx context.Context, s *writeScratch, key routeKey, metrics []morse.Metric) error {
	o.logger().Debug("server refused the request as too large; splitting the batch", "metrics", len(metrics))
	return httpout.Halves(metrics, func(half []morse.Metric) error {
		return o.writeSplit(ctx, s, key, half, false)
	})
}

func isReason(err error, reason string) bool {
	var pe *morse.PermanentError
	return errors.As(err, &pe) && pe.Reason == reason
}

// WritesLines tells the agent that line metrics (morse.NewLineMetric) may come as they are:
// the serializer writes their text. An output that routes or edits metrics by their tags
// would only expand each one, so it takes them expanded.
func (o *InfluxDB) WritesLines() bool {
	return o.DatabaseTag == "" && o.RetentionPolicyTag == ""
}

// serialize writes metrics as line protocol into the write's buffers, gzipped when
// content_encoding asks for it; see httpout.Body.Build.
func (o *InfluxDB) serialize(s *writeScratch, metrics []morse.Metric) (body []byte, dropped int, first error) {
	return s.body.Build(metrics, o.ser.AppendMetric, o.prepare, o.ContentEncoding == "gzip")
}

// prepare applies the options that change a metric on its way out. Metric is a value, so
// this changes only the copy that is written.
func (o *InfluxDB) prepare(m morse.Metric) morse.Metric {
	if o.ExcludeDatabaseTag && o.DatabaseTag != "" {
		m = m.WithoutTag(o.DatabaseTag)
	}
	if o.ExcludeRetentionPolicyTag && o.RetentionPolicyTag != "" {
		m = m.WithoutTag(o.RetentionPolicyTag)
	}
	if o.InfluxOmitTimestamp {
		m = m.WithTime(time.Time{})
	}
	return m
}

// post sends one body, trying the URLs in turn on connection failures, starting with the
// one that answered last (httpout.Post). The first URL that answers decides: its answer is
// classified, and the other URLs are not tried, because a partial write must not be
// repeated elsewhere. plainLen is the size of the body before compression, which bounds
// how much of an error answer is read.
func (o *InfluxDB) post(ctx context.Context, key routeKey, body []byte, lines, plainLen int) error {
	q := url.Values{"db": {key.db}}
	if key.rp != "" {
		q.Set("rp", key.rp)
	}
	if o.WriteConsistency != "" {
		q.Set("consistency", o.WriteConsistency)
	}
	rawQuery := q.Encode()
	a, idx, err := httpout.Post(ctx, &o.failover, "influxdb", len(o.targets), o.writeURL, o.logger, func(i int) (answer, error) {
		return o.send(ctx, o.targets[i], rawQuery, body, plainLen)
	})
	if err != nil {
		return err
	}
	if a.status/100 == 4 {
		o.reportTagLimit(a.msg)
	}
	return classifyAnswer(a, o.targets[idx].write, lines)
}

// writeURL names the write endpoint of URL i, without credentials.
func (o *InfluxDB) writeURL(i int) string { return o.targets[i].write }

// send makes one request and reads its answer (httpout.Send). Its error is a transport
// error: refused, reset, timed out.
func (o *InfluxDB) send(ctx context.Context, t target, rawQuery string, body []byte, plainLen int) (answer, error) {
	u := *t.base
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/")+"/write", ""
	u.RawQuery = rawQuery
	return httpout.Send(ctx, o.client, u.String(), body, timeoutOf(o.Timeout), o.setHeaders, func(resp *http.Response) answer {
		return readAnswer(resp.StatusCode, resp.Header, resp.Body, scanLimit(plainLen))
	})
}

// scanLimit bounds how much of an error body is read. InfluxDB quotes every line it could not
// parse once, and JSON escaping at most sextuples a byte, so an honest answer to n bytes of
// line protocol is shorter than this.
func scanLimit(n int) int64 { return maxMessage + 8*int64(n) }

// setHeaders sets what every request carries: the user agent, the configured headers, JSON
// answers and the credentials (as basic auth, so that they never appear in a URL), and
// then the body's type and encoding.
func (o *InfluxDB) setHeaders(req *http.Request) {
	req.Header.Set("User-Agent", o.UserAgent)
	req.Header.Set("Accept", "application/json")
	httpout.SetHeaders(req, o.HTTPHeaders)
	httpout.Auth{Username: o.Username, Password: o.Password}.Set(req)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if o.ContentEncoding == "gzip" {
		req.Header.Set("Content-Encoding", "gzip")
	}
}
