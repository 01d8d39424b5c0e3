package influxdbv2

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/httpwrite"
)

// Drop reasons of this output beyond the shared ones in package morse.
const (
	ReasonBucketNotFound       = "bucket_not_found"
	ReasonOrganizationNotFound = "organization_not_found"
	ReasonNotFound             = "not_found" // a "not found" of the v2 API that names neither
	ReasonTooLarge             = "request_too_large"
	ReasonInvalid              = "invalid"              // the v2 API's "invalid", not a parse error
	ReasonUnprocessable        = "unprocessable_entity" // the v2 API's, not a partial write
	ReasonFieldTooLong         = "field_too_long"
	ReasonSchemaLimit          = "schema_limit" // series, values per tag, tables or columns
	ReasonPartialWrite         = "partial_write"
)

// ServerError is an answer of the server other than success. Every error that Write returns
// for an answer wraps one, so callers can read the status and the server's own words.
type ServerError struct {
	StatusCode int
	Code       string // the v2 API's error code, such as "invalid"; empty when none
	Message    string // the server's message, its first 64 KiB
	URL        string // the write endpoint, without query or credentials
	Bucket     string
}

// Is reports a 401 or 403 as morse.ErrUnauthorized, so that the batch writer applies
// unauthorized_retry_max_age to it.
func (e *ServerError) Is(target error) bool {
	return target == morse.ErrUnauthorized &&
		(e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// Error names the endpoint, the bucket, the status and the server's message.
func (e *ServerError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	if e.Code != "" {
		msg = e.Code + ": " + msg
	}
	return fmt.Sprintf("influxdb_v2 %s (bucket %q): %d: %s", e.URL, e.Bucket, e.StatusCode, msg)
}

var (
	// errTooLarge marks a 413: the piece must be written in halves (see writePiece).
	errTooLarge = errors.New("request body too large for the server")
	// errUncounted marks a partial write whose rejected lines the server did not count:
	// the halves are written to count them (see writePiece).
	errUncounted = errors.New("partial write without a count of the rejected lines")
)

// The servers' own words that decide a class. testdata/influxdb/v2-answers.md quotes each
// answer with the source file it comes from.
const (
	v3Partial = "partial write of line protocol occurred" // InfluxDB 3
	v2Partial = "partial write:"                          // InfluxDB 1.x and 2.x
	parseMsg  = "unable to parse '"                       // one per line InfluxDB 1.x/2.x could not parse
)

// classify decides what an answer to a write of n lines to bucket means. The rule: a batch
// is dropped only if retrying it could never succeed; everything else is retried. Classes
// are taken from what the server says, its JSON code and message, before its status:
//
//	answer                                                    result
//	2xx                                                       nil (stored)
//	401, 403 (unauthorized, forbidden)                        retryable: the token can be fixed
//	413 (request too large)                                   halves (errTooLarge); one line: permanent request_too_large
//	429, 503 (too many requests, unavailable)                 retryable after Retry-After
//	"partial write of line protocol occurred" + data (3.x)    partial, one per listed line
//	"partial write of line protocol occurred", no data (3.5+) halves, to count (errUncounted)
//	4xx "... partial write: <reason> dropped=N ..." (1.x, 2.x) partial, N (+ one per "unable to parse" clause)
//	404 not found: bucket "x" / organization ... / database   permanent bucket_not_found, organization_not_found
//	400 invalid "unable to parse '...'" (2.x: nothing stored) permanent unable_to_parse
//	400, 422 with another v2 code (invalid, unprocessable)    permanent invalid, unprocessable_entity
//	anything else (5xx, internal error, a proxy's 4xx page)   retryable
func classify(a answer, url, bucket string, n int) error {
	if a.status/100 == 2 {
		return nil
	}
	serr := &ServerError{StatusCode: a.status, Code: a.code, Message: a.msg, URL: url, Bucket: bucket}
	after := httpwrite.RetryAfter(a.header, time.Now())
	switch {
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		return morse.Retryable(serr, after)
	case a.status == http.StatusRequestEntityTooLarge:
		return morse.Permanent(ReasonTooLarge, fmt.Errorf("%w: %w", errTooLarge, serr))
	case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
		return morse.Retryable(serr, after)
	case strings.Contains(a.msg, v3Partial):
		if a.lineErrors < 0 {
			return morse.Permanent(ReasonPartialWrite, fmt.Errorf("%w: %w", errUncounted, serr))
		}
		return partial(min(a.lineErrors, n), v3Reason(a.firstLineError), serr)
	case a.status/100 == 4 && strings.Contains(a.msg, v2Partial):
		return v2PartialWrite(a.msg, serr, n)
	case a.status == http.StatusNotFound:
		if reason := notFoundReason(a); reason != "" {
			return morse.Permanent(reason, serr)
		}
	case a.status == http.StatusBadRequest || a.status == http.StatusUnprocessableEntity:
		if reason := refusedReason(a); reason != "" {
			return morse.Permanent(reason, serr)
		}
	}
	return morse.Retryable(serr, after)
}

// partial is a partial write of dropped lines. A "partial write" that dropped nothing (2.x
// strips a field named "time" and says so with dropped=0) stored everything: it is still
// reported, so that the server's words reach the log.
func partial(dropped int, reason string, serr *ServerError) error {
	return &morse.PartialWriteError{Dropped: dropped, Reason: reason, Err: serr}
}

// v2PartialWrite reads InfluxDB 2.x's (and 1.x's) partial write:
// "failure writing points to database: partial write: <reason> dropped=N [for database: ...]".
// 1.x never counts the lines it could not parse in N, so each "unable to parse" clause
// counts one more; 2.x refuses a request with such a line whole, so it has none.
func v2PartialWrite(msg string, serr *ServerError, n int) error {
	dropped, ok := droppedN(msg)
	if !ok {
		return morse.Permanent(ReasonPartialWrite, fmt.Errorf("%w: %w", errUncounted, serr))
	}
	dropped += strings.Count(msg, parseMsg)
	reason := v2Reason(msg[strings.Index(msg, v2Partial)+len(v2Partial):])
	return partial(min(dropped, n), reason, serr)
}

// droppedN finds N of the last " dropped=N" in msg.
func droppedN(msg string) (int, bool) {
	i := strings.LastIndex(msg, " dropped=")
	if i < 0 {
		return 0, false
	}
	digits := msg[i+len(" dropped="):]
	end := 0
	for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	v, err := strconv.Atoi(digits[:end])
	return v, err == nil
}

// v2Reason names the reason of a 1.x/2.x partial write, given what follows "partial write:".
func v2Reason(msg string) string {
	msg = strings.TrimSpace(msg)
	switch {
	case strings.HasPrefix(msg, "field type conflict"):
		return morse.ReasonFieldTypeConflict
	case strings.Contains(msg, "points outside retention policy"), // 2.x
		strings.HasPrefix(msg, "points beyond retention policy"): // 1.x
		return morse.ReasonBeyondRetention
	case strings.HasPrefix(msg, parseMsg):
		return morse.ReasonUnableToParse
	case strings.Contains(msg, " is too long, "):
		return ReasonFieldTooLong
	case strings.HasPrefix(msg, "max-values-per-tag limit exceeded"),
		strings.HasPrefix(msg, "max-series-per-database limit exceeded"):
		return ReasonSchemaLimit
	}
	return ReasonPartialWrite
}

// v3Reason names the reason of an InfluxDB 3 line error (influxdb3_catalog/src/error.rs,
// core/influxdb_line_protocol/src/lib.rs).
func v3Reason(msg string) string {
	low := strings.ToLower(msg)
	switch {
	case strings.HasPrefix(low, "invalid column type"):
		return morse.ReasonFieldTypeConflict
	case strings.Contains(low, "would exceed"):
		return ReasonSchemaLimit
	case strings.Contains(low, "parse"), strings.HasPrefix(low, "expected "),
		strings.HasPrefix(low, "no fields"), strings.HasPrefix(low, "invalid "),
		strings.Contains(low, "duplicate"), strings.Contains(low, "multiple instances"),
		strings.Contains(low, "malformed"):
		return morse.ReasonUnableToParse
	}
	return ReasonPartialWrite
}

// notFoundReason names what a 404 says is missing, or "" when the 404 is not InfluxDB's
// (a proxy, or a server without /api/v2/write): the URL can be fixed while data waits.
func notFoundReason(a answer) string {
	msg := strings.ToLower(a.msg)
	switch {
	case strings.HasPrefix(msg, "bucket "), strings.HasPrefix(msg, "database not found"):
		return ReasonBucketNotFound
	case strings.HasPrefix(msg, "organization "):
		return ReasonOrganizationNotFound
	case a.code == "not found":
		return ReasonNotFound
	}
	return ""
}

// refusedReason names why InfluxDB refused a request as malformed (400) or unprocessable
// (422), or "" when the answer is not InfluxDB's.
func refusedReason(a answer) string {
	switch {
	case strings.HasPrefix(a.msg, parseMsg):
		return morse.ReasonUnableToParse
	case strings.HasPrefix(a.msg, "field type conflict"):
		return morse.ReasonFieldTypeConflict
	case strings.HasPrefix(a.msg, "points beyond retention policy"):
		return morse.ReasonBeyondRetention
	case a.code == "invalid", a.code == "empty value":
		return ReasonInvalid
	case a.code == "unprocessable entity", a.code == "conflict":
		return ReasonUnprocessable
	}
	return ""
}
