package http

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// Drop reasons of this output beyond the shared ones.
const (
	// ReasonRefused counts a request refused with a 4xx that no retry could change (400,
	// 405, 409, 415, 422 ...), and a remote-write request refused for a reason no sample
	// names.
	ReasonRefused = "refused"
	// ReasonNonRetryable counts a request whose status non_retryable_statuscodes lists.
	ReasonNonRetryable = "non_retryable_status"
	// ReasonOutOfOrder, ReasonDuplicate and ReasonOutOfBounds count the metrics whose
	// samples a remote-write receiver refused: older than the latest of their series, a
	// second value at a time it has, or outside the time range it takes.
	ReasonOutOfOrder  = "out_of_order"
	ReasonDuplicate   = "duplicate_sample"
	ReasonOutOfBounds = "out_of_bounds"
	ReasonTooLarge    = httpout.ReasonTooLarge
)

// sampleErrors are the messages in which remote-write receivers refuse a request for one of
// its samples, by reason: Prometheus's storage errors (storage.ErrOutOfOrderSample,
// ErrDuplicateSampleForTimestamp, ErrOutOfBounds, ErrTooOldSample), which its write handler
// answers with 400 and Thanos Receive with 409, and Mimir's and Cortex's validation errors.
var sampleErrors = []struct{ text, reason string }{
	{"out of order sample", ReasonOutOfOrder},
	{"sample-out-of-order", ReasonOutOfOrder},
	{"duplicate sample for timestamp", ReasonDuplicate},
	{"sample-duplicate-timestamp", ReasonDuplicate},
	{"out of bounds", ReasonOutOfBounds},
	{"too old sample", ReasonOutOfBounds},
	{"sample-timestamp-too-old", ReasonOutOfBounds},
	{"sample-too-far-in-future", ReasonOutOfBounds},
}

// sampleReason is the reason of a remote-write refusal that names a sample, or "".
func sampleReason(status int, msg string) string {
	if status != http.StatusBadRequest && status != http.StatusConflict {
		return ""
	}
	msg = strings.ToLower(msg)
	for _, e := range sampleErrors {
		if strings.Contains(msg, e.text) {
			return e.reason
		}
	}
	return ""
}

// classify sorts an answer other than success:
//
//	a remote-write refusal of a sample  -> *morse.RejectedError: the batch writer writes the
//	                                       batch in halves until it has the refused metrics
//	                                       (the receiver names one sample, not its metric,
//	                                       and stores nothing of the request)
//	413                                 -> too large: the halves are written (Write)
//	a retryable status in               -> permanent, non_retryable_status, as Telegraf
//	  non_retryable_statuscodes            drops it
//	other 4xx                           -> permanent, refused
//	429, 5xx, 401, 403, 404, 408, 3xx   -> retried, after Retry-After (401 and 403 match
//	                                       morse.ErrUnauthorized)
func (o *HTTP) classify(e *httpout.StatusError, h http.Header) error {
	if o.remoteWrite() {
		if reason := sampleReason(e.StatusCode, e.Message); reason != "" {
			return &morse.RejectedError{Index: -1, Reason: reason, Err: e}
		}
	}
	class := httpout.ClassOf(e.StatusCode)
	if class == httpout.ClassRetry && slices.Contains(o.NonRetryableStatusCodes, e.StatusCode) {
		return morse.Permanent(ReasonNonRetryable, fmt.Errorf("%w (non_retryable_statuscodes)", e))
	}
	return httpout.Classify(e.StatusCode, h, e, ReasonRefused)
}
