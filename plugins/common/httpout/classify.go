package httpout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// ReasonTooLarge is the drop reason of a request that the server refuses as too large
// (413) even with a single metric in it.
const ReasonTooLarge = "request_too_large"

// ErrTooLarge marks a 413 (see TooLarge): the output writes the halves (Halves) rather than
// the same request again, which the server would never accept.
var ErrTooLarge = errors.New("request body too large for the server")

// Class is what an answer's status alone says about a write, by the rule of morse's
// outputs: drop only what retrying could never store.
type Class int

// The classes of ClassOf.
const (
	// ClassStored is a 2xx.
	ClassStored Class = iota
	// ClassRetry is a status that may pass: 401 and 403 (credentials can be fixed), 404
	// and 421 (a proxy, an endpoint turned off, a replica), 408, 425, 429, any 5xx, and
	// what a client that follows no redirect is left with (1xx, 3xx).
	ClassRetry
	// ClassTooLarge is a 413: the request, not its metrics, is too large.
	ClassTooLarge
	// ClassRefused is any other 4xx: the same request would be refused however often it
	// were sent.
	ClassRefused
)

// ClassOf classifies a status. An output whose server says more in its answer's body
// (which metrics it refused, and why) reads that first, and falls back on this.
func ClassOf(status int) Class {
	switch {
	case status/100 == 2:
		return ClassStored
	case status == http.StatusRequestEntityTooLarge:
		return ClassTooLarge
	case Unauthorized(status), status == http.StatusNotFound, status == http.StatusRequestTimeout,
		status == http.StatusMisdirectedRequest, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return ClassRetry
	case status/100 == 4:
		return ClassRefused
	}
	return ClassRetry
}

// Unauthorized reports a 401 or a 403. An output's error type reports such an answer as
// morse.ErrUnauthorized (in its Is method), so that the batch writer applies
// unauthorized_retry_max_age to it.
func Unauthorized(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// Retryable is err made retryable after the wait that the answer's Retry-After asks for
// (none when it has none).
func Retryable(err error, h http.Header) error {
	return morse.Retryable(err, RetryAfter(h, time.Now()))
}

// TooLarge is the error of a 413: permanent, ReasonTooLarge, and matching ErrTooLarge so
// that the output knows to write the halves.
func TooLarge(err error) error {
	return morse.Permanent(ReasonTooLarge, fmt.Errorf("%w: %w", ErrTooLarge, err))
}

// Classify is the outcome of an answer by its status alone: nil when ClassStored, TooLarge
// when ClassTooLarge, permanent with reason when ClassRefused, otherwise Retryable. err is
// the output's own error for the answer (see StatusError), wrapped in what Classify returns.
func Classify(status int, h http.Header, err error, reason string) error {
	switch ClassOf(status) {
	case ClassStored:
		return nil
	case ClassTooLarge:
		return TooLarge(err)
	case ClassRefused:
		return morse.Permanent(reason, err)
	}
	return Retryable(err, h)
}

// StatusError is an answer other than success, for an output whose server says no more
// than a status and a message. Outputs whose servers say more have an error type of their
// own.
type StatusError struct {
	StatusCode int
	Message    string // the server's message, or the start of its answer's body
	URL        string // the endpoint, without credentials
}

// Error names the endpoint, the status and the server's message.
func (e *StatusError) Error() string {
	msg := Message(e.StatusCode, e.Message)
	return fmt.Sprintf("%s: %d: %s", e.URL, e.StatusCode, msg)
}

// Is reports a 401 or 403 as morse.ErrUnauthorized, so that the batch writer applies
// unauthorized_retry_max_age to it.
func (e *StatusError) Is(target error) bool {
	return target == morse.ErrUnauthorized && Unauthorized(e.StatusCode)
}

// Message is what a server said, msg, or, when it said nothing, the text of its status, for
// the text of an error.
func Message(status int, msg string) string {
	if msg == "" {
		return http.StatusText(status)
	}
	return msg
}

// MaxMessage bounds what is kept of a server's message, for errors and logs.
const MaxMessage = 64 << 10

// ReadAnswer reads at most limit bytes of an answer's body and then drains up to MaxMessage
// more, so that the connection can be reused; an answer longer than that is left unread
// and its connection closed when the body is.
func ReadAnswer(body io.Reader, limit int64) []byte {
	lr := &io.LimitedReader{R: body, N: limit} // one for both reads: a write's answer is read per request
	b, _ := io.ReadAll(lr)
	lr.N = MaxMessage
	_, _ = io.Copy(io.Discard, lr)
	return b
}

// NewStatusError reads resp's body (at most MaxMessage of it, as text) into a StatusError
// for url, the endpoint without credentials.
func NewStatusError(url string, resp *http.Response) *StatusError {
	msg := ReadAnswer(resp.Body, MaxMessage)
	return &StatusError{StatusCode: resp.StatusCode, URL: url,
		Message: strings.ToValidUTF8(string(bytes.TrimSpace(msg)), "")}
}
