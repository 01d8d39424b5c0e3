package iotdb

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// writeScratch is what one write in flight has of its own: the tablets and the body. It is
// reused through the output's free list.
type writeScratch struct {
	b    builder
	body []byte
}

// maxKeptBody bounds the body kept between writes.
const maxKeptBody = 8 << 20

// Write sends the batch as one insertTablet request per tablet (per device, and a further
// one for a device's rows whose values change type), in the order of the batch's devices.
// The outcome of each tablet is booked at its metrics' positions (httpout.Tally): stored,
// dropped in part (507: the rows that carried a refused measurement), or refused. A
// retryable answer to any tablet retries the whole batch, which rewrites the tablets
// already stored with the same values; a tablet refused whole because of some of its
// metrics makes the batch writer find them by bisection (morse.RejectedError).
func (o *IoTDB) Write(ctx context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	if o.client == nil {
		if err := o.setup(); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	client, endpoint, set := o.client, o.endpoint, o.set
	o.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	s := o.scratch.Get()
	defer o.putScratch(s)
	s.b.set = set
	s.b.build(batch)
	var t httpout.Tally
	if len(s.b.failed) > 0 {
		t.AddAt(morse.Permanent(morse.ReasonSerialize, s.b.firstErr), s.b.failed)
	}
	for _, tab := range s.b.list() {
		s.body = tab.appendBody(s.body[:0])
		a, err := o.send(ctx, client, endpoint, s.body)
		if err != nil {
			return morse.Retryable(&ServerError{URL: endpoint, Device: tab.device, Err: err}, 0)
		}
		err = classify(a, endpoint, tab, batch, set.tagsAsFields)
		switch {
		case err == nil:
		case morse.Classify(err) == morse.OutcomeRetry:
			return err
		case isRejected(err):
			return err
		default:
			t.AddAt(err, tab.positions)
		}
	}
	return t.Err(len(batch))
}

func isRejected(err error) bool {
	_, ok := errors.AsType[*morse.RejectedError](err)
	return ok
}

func (o *IoTDB) putScratch(s *writeScratch) {
	if cap(s.body) <= maxKeptBody {
		o.scratch.Put(s)
	}
}

// send posts one body and reads IoTDB's answer.
func (o *IoTDB) send(ctx context.Context, client *http.Client, endpoint string, body []byte) (answer, error) {
	return httpout.Send(ctx, client, endpoint, body, time.Duration(o.Timeout), o.setHeaders,
		func(resp *http.Response) answer { return readAnswer(resp) })
}

// setHeaders sets the body's type, JSON answers and the credentials.
func (o *IoTDB) setHeaders(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	httpout.Auth{Username: string(o.User), Password: o.Password}.Set(req)
}
