package opentelemetry

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// StatusError is a receiver's refusal of an export: a gRPC status, or an HTTP status with
// the message of the google.rpc.Status in its body. Find it with errors.As.
type StatusError struct {
	// Code is the gRPC code, or for HTTP the code the status maps to (codes.Unknown for
	// those the specification does not map).
	Code codes.Code
	// HTTPStatus is the HTTP status; 0 over gRPC.
	HTTPStatus int
	Message    string
}

// Error names the code and the receiver's message.
func (e *StatusError) Error() string {
	if e.HTTPStatus != 0 {
		return fmt.Sprintf("otlp/http: %d: %s", e.HTTPStatus, httpout.Message(e.HTTPStatus, e.Message))
	}
	return fmt.Sprintf("otlp/grpc: %s: %s", e.Code, e.Message)
}

// Is reports a refusal of the credentials as morse.ErrUnauthorized, so that the batch
// writer applies unauthorized_retry_max_age to it.
func (e *StatusError) Is(target error) bool {
	if target != morse.ErrUnauthorized {
		return false
	}
	if e.HTTPStatus != 0 {
		return httpout.Unauthorized(e.HTTPStatus)
	}
	return e.Code == codes.Unauthenticated || e.Code == codes.PermissionDenied
}

// classifyGRPC sorts the error of a gRPC export. The OTLP specification's retryable codes
// are retried, with the wait a RetryInfo detail asks for; so are ResourceExhausted (a
// receiver's memory limiter: the specification retries it only with RetryInfo, but
// the same batch passes once the receiver has room) and, by morse's rule that an operator
// can fix credentials while the data waits, Unauthenticated and PermissionDenied. A
// message larger than the receiver takes is too large (the output writes the halves). The
// other codes (InvalidArgument, NotFound, Unimplemented, Internal, Unknown ...) are
// permanent, counted under the code's snake_case name. An error without a status (no
// connection) is retried.
func classifyGRPC(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return morse.Retryable(err, 0)
	}
	se := &StatusError{Code: st.Code(), Message: st.Message()}
	switch st.Code() {
	case codes.OK:
		return nil
	case codes.ResourceExhausted:
		if strings.Contains(st.Message(), "larger than max") {
			return httpout.TooLarge(se)
		}
		return morse.Retryable(se, retryDelay(st))
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable,
		codes.DataLoss, codes.Unauthenticated, codes.PermissionDenied:
		return morse.Retryable(se, retryDelay(st))
	}
	return morse.Permanent(snake(st.Code().String()), se)
}

// retryDelay is the wait of a RetryInfo detail, zero without one.
func retryDelay(st *status.Status) time.Duration {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return min(ri.GetRetryDelay().AsDuration(), httpout.MaxRetryAfter)
		}
	}
	return 0
}

// snake is InvalidArgument as invalid_argument.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// classifyHTTP sorts an HTTP answer other than success as the OTLP specification does,
// not by morse's rule for other HTTP outputs (httpout.ClassOf), which retries every 5xx: an
// OTLP receiver answers 500 for what it will never take (the collector's OTLP receiver
// does so for its pipeline's permanent errors, and 503 for the transient ones). So 429,
// 502, 503, 504 and 408 are retried with Retry-After; 401 and 403 too (credentials can be
// fixed), and 404 (a proxy, or an endpoint not yet on), as morse's other outputs do; 413 is
// too large (the output writes the halves); anything else is permanent, counted under
// http_STATUS.
func classifyHTTP(code int, h http.Header, msg string) error {
	se := &StatusError{Code: httpCode(code), HTTPStatus: code, Message: msg}
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		http.StatusRequestTimeout, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return httpout.Retryable(se, h)
	case http.StatusRequestEntityTooLarge:
		return httpout.TooLarge(se)
	}
	if code/100 == 1 || code/100 == 3 { // what a client that follows no redirect is left with
		return httpout.Retryable(se, h)
	}
	return morse.Permanent(fmt.Sprintf("http_%d", code), se)
}

// httpCode is the gRPC code of an HTTP status, as gRPC maps them.
func httpCode(code int) codes.Code {
	switch code {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	case http.StatusInternalServerError:
		return codes.Internal
	}
	return codes.Unknown
}
