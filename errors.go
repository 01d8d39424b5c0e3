package morse

import (
	"errors"
	"fmt"
	"time"
)

// Drop reasons. Every metric that morse loses is counted under exactly one of these, so that
// operators can tell a full buffer from data the server refused.
const (
	ReasonBufferFull        = "buffer_full"
	ReasonFieldTypeConflict = "field_type_conflict"
	ReasonBeyondRetention   = "beyond_retention_policy"
	ReasonUnableToParse     = "unable_to_parse"
	ReasonDatabaseNotFound  = "database_not_found"
	ReasonSerialize         = "serialize"
	ReasonPermanent         = "permanent"
	ReasonShutdown          = "shutdown"
	// ReasonUnknown counts the metrics of a write that was sent but had no answer when
	// shutdown cancelled it: the sink may have stored them or not. They are counted as
	// dropped, and left unsent, because nothing confirmed them.
	ReasonUnknown      = "unknown"
	ReasonRetryExpired = "retry_expired"
	// ReasonBufferBytes and ReasonTooOld count the oldest metrics a buffer evicted to stay
	// within its byte bound (buffer_max_bytes) and its age bound (buffer_max_age).
	ReasonBufferBytes = "buffer_bytes"
	ReasonTooOld      = "too_old"
	// ReasonCorrupt counts metrics a disk buffer found damaged on disk and skipped: by the
	// count their record's header gives, or one per record whose header is unreadable.
	ReasonCorrupt = "corrupt"
)

// ErrUnauthorized is wrapped by outputs into the retryable error of a write the sink refused
// as unauthorized (HTTP 401 or 403), which an operator can fix while the data waits. The
// batch writer finds it with errors.Is to apply a retry limit of its own to that class.
var ErrUnauthorized = errors.New("unauthorized")

// PermanentError marks a write that can never succeed: retrying the same batch would fail the
// same way. The batch is dropped and counted under Reason.
type PermanentError struct {
	Reason string // one of the Reason constants, or another short snake_case word
	Err    error
}

// Permanent wraps err as a permanent error counted under reason.
func Permanent(reason string, err error) error {
	return &PermanentError{Reason: reason, Err: err}
}

// Error is the underlying error's text, or the reason when there is none.
func (e *PermanentError) Error() string {
	if e.Err == nil {
		return "permanent error: " + e.Reason
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// RetryableError marks a write that may succeed later. RetryAfter, when positive, is the wait
// the server asked for; it takes the place of the backoff for that attempt.
type RetryableError struct {
	Err        error
	RetryAfter time.Duration
}

// Retryable wraps err as retryable after the given wait (zero: use the backoff).
func Retryable(err error, after time.Duration) error {
	return &RetryableError{Err: err, RetryAfter: after}
}

// Error is the underlying error's text, with the wait the server asked for.
func (e *RetryableError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v (retry after %s)", e.Err, e.RetryAfter)
	}
	return fmt.Sprint(e.Err)
}

// Unwrap returns the underlying error.
func (e *RetryableError) Unwrap() error { return e.Err }

// PartialWriteError reports that the sink stored some metrics of a batch and rejected the
// rest for good. The batch is never retried, because the stored points would be written
// twice.
//
// Dropped metrics are counted under Reason. Servers such as InfluxDB report only how many
// they dropped, so Written is optional: when it is zero, every other metric of the batch
// counts as written. When a sink does report Written, metrics that it neither stored nor
// reported as dropped are counted as dropped too, so that written plus dropped always equals
// the batch.
//
// A sink that knows which metrics it dropped, such as a routed write whose one sub-request
// failed, lists their positions in the batch in Indices; then Dropped is len(Indices), and
// the drop report carries exactly those metrics. Drops of the same write under other
// reasons, each with Indices of its own, go in More, so that every reason is counted
// exactly.
type PartialWriteError struct {
	Written int
	Dropped int
	Reason  string
	Err     error
	Indices []int
	More    []*PartialWriteError
}

// Error gives the counts, the reason and the server's message.
func (e *PartialWriteError) Error() string {
	if e.Written > 0 {
		return fmt.Sprintf("partial write: %d written, %d dropped (%s): %v", e.Written, e.Dropped, e.Reason, e.Err)
	}
	return fmt.Sprintf("partial write: %d dropped (%s): %v", e.Dropped, e.Reason, e.Err)
}

// Unwrap returns a *PermanentError with the same reason around the underlying error, so
// that errors.As finds a partial write as permanent too: the dropped metrics can never be
// written. Classify tells the two apart.
func (e *PartialWriteError) Unwrap() error {
	return &PermanentError{Reason: e.Reason, Err: e.Err}
}

// Split returns how many of a batch of n were written and how many dropped, by the rules
// above: written plus dropped is always n.
func (e *PartialWriteError) Split(n int) (written, dropped int) {
	dropped = e.own()
	for _, m := range e.More {
		dropped += m.own()
	}
	dropped = min(dropped, n)
	if len(e.Indices) > 0 {
		return n - dropped, dropped
	}
	written = n - dropped
	if e.Written > 0 {
		written = min(e.Written, written)
		dropped = n - written
	}
	return written, dropped
}

// own is how many this part dropped, without More.
func (e *PartialWriteError) own() int {
	if len(e.Indices) > 0 {
		return len(e.Indices)
	}
	return max(e.Dropped, 0)
}

// RejectedError reports that the sink refused a whole request for good because of some of
// its metrics, and stored none of it, as QuestDB does for a type conflict in one line. The
// batch writer then finds the offending metrics, by the position the sink named or by
// bisection, writes the rest, and drops only those. Index is the position in the batch of a
// metric the sink named, or -1 when it did not say which. A request refused for a reason no
// metric causes (an unknown database) is a plain *PermanentError instead, and is not split.
type RejectedError struct {
	Index  int
	Reason string
	Err    error
}

// Error is the sink's message.
func (e *RejectedError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("request rejected at metric %d (%s): %v", e.Index, e.Reason, e.Err)
	}
	return fmt.Sprintf("request rejected (%s): %v", e.Reason, e.Err)
}

// Unwrap returns a *PermanentError with the same reason, so that a writer that does not
// isolate the offending metrics drops the batch as permanent.
func (e *RejectedError) Unwrap() error { return &PermanentError{Reason: e.Reason, Err: e.Err} }

// WriteOutcome is how the flush loop treats the result of one Write.
type WriteOutcome int

// The outcomes of a write.
const (
	OutcomeWritten WriteOutcome = iota
	OutcomeRetry
	OutcomeDropped
	OutcomePartial
)

// Classify decides what a write result means. A partial write is checked first because a
// sink may wrap it in a permanent error; a permanent error anywhere in the chain wins over a
// retryable one, because retrying it can never succeed.
func Classify(err error) WriteOutcome {
	if err == nil {
		return OutcomeWritten
	}
	var pw *PartialWriteError
	if errors.As(err, &pw) {
		return OutcomePartial
	}
	var pe *PermanentError
	if errors.As(err, &pe) {
		return OutcomeDropped
	}
	return OutcomeRetry
}

// FieldError is a config problem tied to one key. The loader adds the file and line.
type FieldError struct {
	Key string
	Err error
}

// Errorf makes a FieldError for key.
func Errorf(key, format string, args ...any) error {
	return &FieldError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Error is "key: problem".
func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FieldError) Unwrap() error { return e.Err }
