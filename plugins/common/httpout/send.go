package httpout

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Send posts body to url with client and reads the answer with read, within timeout when
// it is positive: a bound of its own for each request, so that each URL of a failover gets
// a fresh one, and read finishes with the answer's body before the bound ends. header sets
// the request's headers. The error is a transport error (refused, reset, timed out): any
// answer, whatever its status, is read's to judge. When Send returns, the transport is done
// with body (Released).
func Send[A any](ctx context.Context, client *http.Client, url string, body []byte, timeout time.Duration,
	header func(*http.Request), read func(*http.Response) A) (A, error) {
	var none A
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := NewRequest(ctx, http.MethodPost, url, body)
	if err != nil {
		return none, err
	}
	defer Released(req) // after the answer is closed: the caller builds its next body in body
	header(req)
	resp, err := client.Do(req)
	if err != nil {
		return none, err
	}
	defer resp.Body.Close()
	return read(resp), nil
}

// MinWriteTimeout is the batch writer's default bound of a write, batch.DefaultWriteTimeout.
const MinWriteTimeout = 30 * time.Second

// WriteTimeout is the bound of one write of an output whose requests are each bounded by
// timeout: timeout, but never below MinWriteTimeout. A write may take several requests (a
// URL that does not answer and then the next; one per database or bucket; the halves of a
// 413), each bounded on its own, and they need room together: with a bound equal to
// timeout, a first URL that accepts and never answers used up the write, and the next was
// never tried. A longer timeout is not cut short. The agent's health check also allows a
// write this long before it calls the output stuck.
func WriteTimeout(timeout time.Duration) time.Duration { return max(timeout, MinWriteTimeout) }

// RedactURL is u without its user information, for errors and logs. Unlike u.Redacted,
// which keeps the user name, it leaves no part of the credentials.
func RedactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
