package influxdbv2

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"net/url"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/httpwrite"
	"github.com/morse-agent/morse/internal/route"
	"github.com/morse-agent/morse/internal/tally"
	"github.com/morse-agent/morse/plugins/common/httpclient"
)

// Write sends the batch, one request per bucket, and returns nil, a
// *morse.PartialWriteError with the exact number of dropped metrics, a
// *morse.RejectedError when a request was refused whole because of some of its lines (the
// batch writer then finds them and writes the rest), an error wrapping a
// *morse.PermanentError, or a retryable error; see classify.
//
// When one bucket's request must be retried, the whole batch is, and the buckets that had
// succeeded are written again: a point with the same series and time is stored once, so
// this only rewrites the same values. (Retrying only that bucket's metrics, as Telegraf
// does, is something morse.PartialWriteError cannot say: its metrics are dropped for good.)
// A bucket that fails for good is counted exactly and does not hold the others back.
//
// Write is safe for concurrent use: each call has buffers of its own.
func (o *InfluxDBv2) Write(ctx context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	if !o.ready {
		if err := o.setup(); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	o.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	ctx, done := o.detach(ctx)
	defer done()
	s := o.getScratch()
	defer o.putScratch(s)
	if o.BucketTag == "" {
		return o.writeBucket(ctx, s, o.Bucket, batch)
	}
	defer s.groups.Reset()
	return writeGroups(o.route(s, batch), len(batch), func(key string, ms []morse.Metric) error {
		return o.writeBucket(ctx, s, key, ms)
	})
}

// WriteTimeout tells the batch writer to bound each write by the timeout option, as
// outputs.influxdb does, rather than by its default of 30 s, which would cut a longer
// timeout short. Each request is bounded by timeout on its own (see send); detach keeps a
// write of several requests from being cut at that bound while they are answered.
func (o *InfluxDBv2) WriteTimeout() time.Duration { return time.Duration(o.Timeout) }

// detach returns the context of one write's requests: ctx without its deadline, but ended
// when ctx is cancelled for any other reason (the agent stopping). A write may need many
// requests, one per bucket and more for 413 halves or to count rejected lines, and the
// batch writer's deadline, timeout from the start of the write, would cut it short however
// promptly each is answered. Every request is still bounded by timeout, so a server that
// stops answering ends the write after one timeout, as before. Once ctx's deadline has
// passed, ctx no longer tells of a cancel above it, so a stopping agent's cancel reaches
// the rest of such a write only through timeout, and the batch writer's own limit on how
// long it waits for a cancelled write. With timeout 0, which bounds no request, ctx is kept
// as it is.
func (o *InfluxDBv2) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); !ok || o.Timeout <= 0 {
		return ctx, func() {}
	}
	dctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	return dctx, func() {
		stop()
		cancel(nil)
	}
}

// writeGroups writes each group of a routed batch of n metrics with write and adds up the
// outcomes by the groups' positions in the batch, so that a group refused as a whole is
// reported as exactly its metrics. A retryable outcome of any group is returned at once
// for the whole batch. So is a group refused because of some of its lines
// (morse.RejectedError): the batch writer then searches the whole batch, and each piece it
// sends is routed again, so every other bucket is still written, in the search; what was
// written before only gets the same values again. Returning it for the batch is what keeps
// the search: booked as a drop, it would drop the group's good metrics with the bad.
func writeGroups(groups []route.Group[string], n int, write func(string, []morse.Metric) error) error {
	var t tally.Tally
	for _, g := range groups {
		if err := settle(&t, write(g.Key, g.Metrics), g.Positions); err != nil {
			return err
		}
	}
	return t.Err(n)
}

// settle books in t the outcome err of the piece at positions pos of a whole, or returns
// the error that decides the whole at once: a retryable one, or a *morse.RejectedError
// with its Index, if any, made a position in the whole.
func settle(t *tally.Tally, err error, pos []int) error {
	if morse.Classify(err) == morse.OutcomeRetry {
		return err
	}
	if rej, ok := errors.AsType[*morse.RejectedError](err); ok {
		if rej.Index >= 0 && rej.Index < len(pos) {
			return &morse.RejectedError{Index: pos[rej.Index], Reason: rej.Reason, Err: rej.Err}
		}
		return err
	}
	t.AddAt(err, pos)
	return nil
}

// writeScratch is what one write in flight needs of its own: the request body, its gzip
// form, and the groups of a routed batch. It is reused through the output's free list.
type writeScratch struct {
	body   httpwrite.Body
	groups route.Groups[string]
}

func (o *InfluxDBv2) getScratch() *writeScratch { return o.scratch.Get() }

// putScratch keeps s for a later write, unless its body grew too large to keep.
func (o *InfluxDBv2) putScratch(s *writeScratch) {
	if s.body.Keep() {
		o.scratch.Put(s)
	}
}

// maxKeptScratch bounds the buffers kept between writes. The list never holds more than
// were in use at once, so this only matters for a concurrent_writes above it.
const maxKeptScratch = 16

// route splits the batch by the bucket tag; metrics without it go to bucket.
func (o *InfluxDBv2) route(s *writeScratch, batch []morse.Metric) []route.Group[string] {
	s.groups.Reset()
	for _, m := range batch {
		bucket := o.Bucket
		if v, ok := m.Tag(o.BucketTag); ok && v != "" {
			bucket = v
		}
		s.groups.Add(bucket, m)
	}
	return s.groups.List()
}

// search bounds the extra requests spent on one bucket's metrics to find the lines that a
// server rejected without counting them (see errUncounted). Each split costs two requests.
type search struct{ left int }

// newSearch allows enough requests to find about eight rejected lines exactly: finding one
// costs two requests per halving, so 2·log2(n) of them.
func newSearch(n int) *search { return &search{left: 16 * bits.Len(uint(n))} }

func (s *search) take() bool {
	if s.left < 2 {
		return false
	}
	s.left -= 2
	return true
}

// writeBucket writes metrics to one bucket.
func (o *InfluxDBv2) writeBucket(ctx context.Context, s *writeScratch, bucket string, metrics []morse.Metric) error {
	return o.writePiece(ctx, s, newSearch(len(metrics)), bucket, metrics)
}

// writePiece serializes and posts metrics. Two answers make it write the halves instead:
// 413, because the same request would never be accepted however often it were retried, and
// a partial write whose rejected lines the server did not count (InfluxDB 3.5 and later on
// /api/v2/write), because the drops must be counted exactly: halves are written until each
// piece is stored whole or is a single rejected line. Lines already stored are only
// rewritten with the same values.
func (o *InfluxDBv2) writePiece(ctx context.Context, s *writeScratch, sr *search, bucket string, metrics []morse.Metric) error {
	body, serDropped, serErr := o.serialize(s, metrics)
	if len(body) == 0 {
		return serErr // nothing could be serialized: a permanent error for the whole piece
	}
	lines := len(metrics) - serDropped
	err := o.post(ctx, bucket, body, lines, s.body.PlainLen())
	if err != nil {
		// A server or proxy may answer before it has read the body (a 413, a 401, a 404),
		// and Go's transport may then still be sending it after post returns, from these
		// buffers. Later bodies (the halves, the next bucket, the next write) are built in
		// new ones; the old ones are the transport's until it lets go of them.
		s.body = httpwrite.Body{}
	}
	switch {
	case len(metrics) > 1 && errors.Is(err, errTooLarge):
		o.logger().Debug("server refused the request as too large; writing the halves", "metrics", len(metrics))
		return o.writeHalves(ctx, s, sr, bucket, metrics)
	case len(metrics) > 1 && errors.Is(err, errUncounted):
		if sr.take() {
			return o.writeHalves(ctx, s, sr, bucket, metrics)
		}
		err = &morse.PartialWriteError{Dropped: lines, Reason: ReasonPartialWrite, Err: fmt.Errorf(
			"the server stored some of these %d lines without saying how many; the search for the rejected ones used up its requests, so all are counted as dropped: %w", lines, err)}
	}
	if serDropped == 0 || morse.Classify(err) == morse.OutcomeRetry || isRejected(err) {
		return err
	}
	return o.withUnserializable(metrics, serErr, err)
}

// isRejected reports a request refused because of some of its lines: it goes back to the
// batch writer as it is, which searches the whole batch, so no other outcome is added to it.
func isRejected(err error) bool {
	_, ok := errors.AsType[*morse.RejectedError](err)
	return ok
}

// withUnserializable adds the metrics that could not be serialized, under serErr, to err,
// the outcome of the request of the others. The request's lines are those others in order,
// so the positions a server named are made theirs. Serializing is deterministic, so the
// metrics that failed are found again by serializing each alone; this happens only when
// some failed, which is rare.
func (o *InfluxDBv2) withUnserializable(metrics []morse.Metric, serErr, err error) error {
	var bad, good []int
	for i, m := range metrics {
		if _, e := o.ser.AppendMetric(nil, o.prepare(m)); e != nil {
			bad = append(bad, i)
		} else {
			good = append(good, i)
		}
	}
	var t tally.Tally
	t.AddAt(serErr, bad)
	t.AddAt(err, good)
	return t.Err(len(metrics))
}

// writeHalves writes each half of metrics and adds up the outcomes by position. A retryable
// outcome, or a refusal because of some lines, decides the whole piece at once (settle).
func (o *InfluxDBv2) writeHalves(ctx context.Context, s *writeScratch, sr *search, bucket string, metrics []morse.Metric) error {
	var t tally.Tally
	h := len(metrics) / 2
	for _, half := range [][2]int{{0, h}, {h, len(metrics)}} {
		err := o.writePiece(ctx, s, sr, bucket, metrics[half[0]:half[1]])
		if err := settle(&t, err, positions(half[0], half[1])); err != nil {
			return err
		}
	}
	return t.Err(len(metrics))
}

// positions is from, from+1, ..., to-1.
func positions(from, to int) []int {
	pos := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		pos = append(pos, i)
	}
	return pos
}

// serialize writes metrics as line protocol into the write's buffers, gzipped when
// content_encoding asks for it; see httpwrite.Body.Build.
func (o *InfluxDBv2) serialize(s *writeScratch, metrics []morse.Metric) (body []byte, dropped int, first error) {
	return s.body.Build(metrics, o.ser.AppendMetric, o.prepare, o.ContentEncoding != "identity")
}

// prepare applies the options that change a metric on its way out. Metric is a value, so
// this changes only the copy that is written.
func (o *InfluxDBv2) prepare(m morse.Metric) morse.Metric {
	if o.ExcludeBucketTag && o.BucketTag != "" {
		m = m.WithoutTag(o.BucketTag)
	}
	if o.omitTimestamp() {
		m = m.WithTime(time.Time{})
	}
	return m
}

// post sends one body, trying the URLs in turn on connection failures, starting with the
// one that answered last. The first URL that answers decides: its answer is classified, and
// the other URLs are not tried, because a partial write must not be repeated elsewhere.
// plainLen, the size of the body before compression, bounds how much of an error answer is
// read.
func (o *InfluxDBv2) post(ctx context.Context, bucket string, body []byte, lines, plainLen int) error {
	var a answer
	idx, failed := o.failover.Do(ctx, len(o.targets), func(i int) error {
		var err error
		a, err = o.send(ctx, o.targets[i], bucket, body, plainLen)
		return err
	})
	if idx < 0 {
		return morse.Retryable(fmt.Errorf("influxdb_v2: no URL answered: %w", failed), 0)
	}
	if failed != nil {
		o.logger().Info("writing to another URL after a connection failure", "url", o.targets[idx].name, "error", failed)
	}
	return classify(a, o.targets[idx].name, bucket, lines)
}

// send makes one request and reads its answer. Its error is a transport error: refused,
// reset, timed out.
func (o *InfluxDBv2) send(ctx context.Context, t *target, bucket string, body []byte, plainLen int) (answer, error) {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(o.Timeout))
		defer cancel()
	}
	req, err := httpclient.NewRequest(ctx, http.MethodPost, t.prefix+url.QueryEscape(bucket), body)
	if err != nil {
		return answer{}, err
	}
	o.setHeaders(req)
	resp, err := t.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	return readAnswer(resp.StatusCode, resp.Header, resp.Body, answerLimit(plainLen)), nil
}

// setHeaders sets what every request carries: the body's type and encoding, the user agent,
// JSON answers, the token and the configured headers (which may override the others).
func (o *InfluxDBv2) setHeaders(req *http.Request) {
	h := req.Header
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if o.ContentEncoding != "identity" {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("User-Agent", o.UserAgent)
	h.Set("Accept", "application/json")
	if o.Token != "" {
		h.Set("Authorization", "Token "+string(o.Token))
	}
	for k, v := range o.HTTPHeaders {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		h.Set(k, v)
	}
}
