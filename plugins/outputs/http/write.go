package http

import (
	"context"
	"errors"
	"slices"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
	"github.com/morse-agent/morse/plugins/serializers"
)

// writeScratch is the body of one write in flight, reused through the output's free list.
type writeScratch struct {
	plain, zipped []byte
}

// maxKeptBody bounds the buffers kept between writes.
const maxKeptBody = 8 << 20

// Write sends the batch: as one request in the format's batch form (use_batch_format, the
// default), or one request per metric. It returns nil; a *morse.PartialWriteError naming the
// metrics left out (unserializable, refused); a *morse.RejectedError for a remote-write
// request refused for some of its samples; a permanent error when the whole batch is
// refused; or a retryable error, on which the whole batch is sent again, metrics already
// stored included, as Telegraf does.
func (o *HTTP) Write(ctx context.Context, batch []morse.Metric) error {
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
	s := o.scratch.Get()
	defer func() {
		if cap(s.plain)+cap(s.zipped) <= maxKeptBody {
			o.scratch.Put(s)
		}
	}()
	if o.UseBatchFormat {
		return o.writePiece(ctx, s, batch)
	}
	return o.writeEach(ctx, s, batch)
}

// writeEach sends one request per metric, as Telegraf does without use_batch_format. A
// retryable answer stops the write and retries the batch; refusals are counted by position.
func (o *HTTP) writeEach(ctx context.Context, s *writeScratch, batch []morse.Metric) error {
	var t httpout.Tally
	for i := range batch {
		err := o.writePiece(ctx, s, batch[i:i+1])
		if err != nil && morse.Classify(err) == morse.OutcomeRetry {
			return err
		}
		t.AddAt(err, []int{i})
	}
	return t.Err(len(batch))
}

// writePiece serializes metrics as one body (in the batch form with use_batch_format, else
// each metric's Serialize form) and sends it; a 413 makes it send the halves
// instead, until each is stored or is one metric.
func (o *HTTP) writePiece(ctx context.Context, s *writeScratch, metrics []morse.Metric) error {
	var serErr error
	s.plain, serErr = serializers.Append(o.ser, s.plain[:0], metrics, o.UseBatchFormat)
	if len(s.plain) == 0 {
		if serErr == nil {
			return nil // nothing to send: a format that writes nothing for these metrics
		}
		return serializers.Result(serErr, len(metrics))
	}
	if serializers.Dropped(serErr) == 0 && serErr != nil {
		return serErr
	}
	var failed []int
	if e, ok := errors.AsType[*serializers.Error](serErr); ok {
		failed = slices.Clone(e.Indices) // the halves rebuild the buffers
	}
	body := s.plain
	if o.ContentEncoding == "gzip" {
		s.zipped = httpout.AppendGzip(s.zipped[:0], s.plain)
		body = s.zipped
	}
	err := o.post(ctx, body)
	if err != nil {
		// The transport may still read the body after an early answer; later bodies are
		// built in new buffers (see httpout.Released).
		*s = writeScratch{}
	}
	if len(metrics) > 1 && errors.Is(err, httpout.ErrTooLarge) {
		o.logger().Debug("server refused the request as too large; writing the halves", "metrics", len(metrics))
		return httpout.Halves(metrics, func(half []morse.Metric) error { return o.writePiece(ctx, s, half) })
	}
	if len(failed) == 0 || morse.Classify(err) == morse.OutcomeRetry || isRejected(err) {
		return err
	}
	var t httpout.Tally
	t.AddAt(serErr, failed)
	t.AddAt(err, others(len(metrics), failed))
	return t.Err(len(metrics))
}

// others are the positions below n that are not in failed (sorted).
func others(n int, failed []int) []int {
	out := make([]int, 0, n-len(failed))
	for i, f := 0, 0; i < n; i++ {
		if f < len(failed) && failed[f] == i {
			f++
			continue
		}
		out = append(out, i)
	}
	return out
}

func isRejected(err error) bool {
	_, ok := errors.AsType[*morse.RejectedError](err)
	return ok
}

// post sends one body and classifies the answer. A transport error (refused, reset, timed
// out, no OAuth2 token) is retryable.
func (o *HTTP) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	req, err := httpout.NewRequest(ctx, o.method(), o.URL, body)
	if err != nil {
		return morse.Permanent(ReasonRefused, err)
	}
	defer httpout.Released(req)
	req.Header = o.header.Clone()
	if o.host != "" {
		req.Host = o.host
	}
	httpout.Auth{Username: string(o.Username), Password: o.Password}.Set(req)
	resp, err := o.client.Do(req)
	if err != nil {
		return morse.Retryable(err, 0)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_ = httpout.ReadAnswer(resp.Body, 0) // drained, so that the connection is reused
		return nil
	}
	return o.classify(httpout.NewStatusError(o.target, resp), resp.Header)
}
