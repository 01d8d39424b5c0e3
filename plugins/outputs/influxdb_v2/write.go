package influxdbv2

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
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
	s := o.getScratch()
	defer o.putScratch(s)
	if o.BucketTag == "" {
		return o.writeBucket(ctx, s, o.Bucket, batch)
	}
	return httpout.Split(&s.groups, batch, o.bucketOf, func(bucket string, ms []morse.Metric) error {
		return o.writeBucket(ctx, s, bucket, ms)
	})
}

// WriteTimeout bounds a write at timeout, but never below the batch writer's default of
// 30 s (httpout.WriteTimeout): a write may take several requests (one per bucket, 413
// halves, the count of rejected lines), each bounded by timeout on its own (see post). The
// bound is also what the agent's health check allows a write before it calls the output
// stuck, so a write must keep within it.
func (o *InfluxDBv2) WriteTimeout() time.Duration {
	return httpout.WriteTimeout(time.Duration(o.Timeout))
}

// writeScratch is what one write in flight needs of its own: the request body, its gzip
// form, and the groups of a routed batch. It is reused through the output's free list.
type writeScratch struct {
	body   httpout.Body
	groups httpout.Groups[string]
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

// bucketOf is where m goes: the bucket of its tag, else the configured one.
func (o *InfluxDBv2) bucketOf(m morse.Metric) string { return httpout.TagOr(m, o.BucketTag, o.Bucket) }

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
	var unserializable []int // rare: kept apart, since the halves build in the same Body
	if serDropped > 0 {
		unserializable = slices.Clone(s.body.Failed())
	}
	lines := len(metrics) - serDropped
	err := o.post(ctx, bucket, body, lines, s.body.PlainLen())
	if err != nil {
		// A server or proxy may answer before it has read the body (a 413, a 401, a 404),
		// and Go's transport may then still be sending it after post returns, from these
		// buffers. Later bodies (the halves, the next bucket, the next write) are built in
		// new ones; the old ones are the transport's until it lets go of them.
		s.body = httpout.Body{}
	}
	switch {
	case len(metrics) > 1 && errors.Is(err, httpout.ErrTooLarge):
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
	return withUnserializable(len(metrics), unserializable, serErr, err)
}

// isRejected reports a request refused because of some of its lines: it goes back to the
// batch writer as it is, which searches the whole batch, so no other outcome is added to it.
func isRejected(err error) bool {
	_, ok := errors.AsType[*morse.RejectedError](err)
	return ok
}

// withUnserializable adds the n metrics' positions in bad, which could not be serialized,
// under serErr, to err, the outcome of the request of the others. The request's lines are
// those others in order, so the positions a server named are made theirs.
func withUnserializable(n int, bad []int, serErr, err error) error {
	good := make([]int, 0, n-len(bad))
	for i, b := 0, 0; i < n; i++ {
		if b < len(bad) && bad[b] == i {
			b++
			continue
		}
		good = append(good, i)
	}
	var t httpout.Tally
	t.AddAt(serErr, bad)
	t.AddAt(err, good)
	return t.Err(n)
}

// writeHalves writes each half of metrics and adds up the outcomes by position; a retryable
// outcome, or a refusal because of some lines, decides the whole piece (httpout.Each).
func (o *InfluxDBv2) writeHalves(ctx context.Context, s *writeScratch, sr *search, bucket string, metrics []morse.Metric) error {
	return httpout.Halves(metrics, func(half []morse.Metric) error {
		return o.writePiece(ctx, s, sr, bucket, half)
	})
}

// serialize writes metrics as line protocol into the write's buffers, gzipped when
// content_encoding asks for it; see httpout.Body.Build.
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
// one that answered last (httpout.Post). The first URL that answers decides: its answer is
// classified, and the other URLs are not tried, because a partial write must not be
// repeated elsewhere. plainLen, the size of the body before compression, bounds how much
// of an error answer is read.
func (o *InfluxDBv2) post(ctx context.Context, bucket string, body []byte, lines, plainLen int) error {
	a, idx, err := httpout.Post(ctx, &o.failover, "influxdb_v2", len(o.targets), o.writeURL, o.logger, func(i int) (answer, error) {
		return o.send(ctx, o.targets[i], bucket, body, plainLen)
	})
	if err != nil {
		return err
	}
	return classify(a, o.targets[idx].name, bucket, lines)
}

// writeURL names the write endpoint of URL i, without query or credentials.
func (o *InfluxDBv2) writeURL(i int) string { return o.targets[i].name }

// send makes one request and reads its answer (httpout.Send). Its error is a transport
// error: refused, reset, timed out.
func (o *InfluxDBv2) send(ctx context.Context, t *target, bucket string, body []byte, plainLen int) (answer, error) {
	return httpout.Send(ctx, t.client, t.prefix+url.QueryEscape(bucket), body, time.Duration(o.Timeout), o.setHeaders,
		func(resp *http.Response) answer {
			return readAnswer(resp.StatusCode, resp.Header, resp.Body, answerLimit(plainLen))
		})
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
	httpout.Auth{Scheme: "Token", Token: o.Token}.Set(req)
	httpout.SetHeaders(req, o.HTTPHeaders)
}
