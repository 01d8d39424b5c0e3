package influxdbv2

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// Drop reasons of this output beyond the shared ones in package morse.
const (
	ReasonBucketNotFound       = "bucket_not_found"
	ReasonOrganizationNotFound = "organization_not_found"
	ReasonNotFound             = "not_found" // a "not found" of the v2 API that names neither
	ReasonTooLarge             = httpout.ReasonTooLarge
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
	return target == morse.ErrUnauthorized && httpout.Unauthorized(e.StatusCode)
}

// Error names the endpoint, the bucket, the status and the server's message.
func (e *ServerError) Error() string {
	msg := httpout.Message(e.StatusCode, e.Message)
	if e.Code != "" {
		msg = e.Code + ": " + msg
	}
	return fmt.Sprintf("influxdb_v2 %s (bucket %q): %d: %s", e.URL, e.Bucket, e.StatusCode, msg)
}

var (
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
//	413 (request too large)                                   halves (httpout.ErrTooLarge); one line: permanent request_too_large
//	429, 503 (too many requests, unavailable)                 retryable after Retry-After
//	"partial write of line protocol occurred" + data (3.0-3.4) partial, each listed line at its position, under its own reason
//	"partial write of line protocol occurred", no data (3.5+) halves, to count (errUncounted)
//	4xx "... partial write: <reason> dropped=N ..." (1.x, 2.x) partial, N (+ one per line opening "unable to parse")
//	500 "... partial write: <reason> dropped=N" (2.0.0-2.0.3) the same: those versions sent partial writes as 500
//	404 not found: bucket "x" / organization ... / database   permanent bucket_not_found, organization_not_found
//	400 invalid "unable to parse '...'" (2.x: nothing stored) rejected unable_to_parse: the batch writer finds the
//	                                                          bad lines and writes the rest (morse.RejectedError);
//	                                                          permanent when every line is named
//	400 "unable to parse '...'" without a code (1.x)          permanent unable_to_parse: 1.x says so only when no line parsed
//	400, 422 "field type conflict ..." without a prefix (1.x) rejected field_type_conflict, as outputs.influxdb
//	400, 422 with another v2 code (invalid, unprocessable)    permanent invalid, unprocessable_entity
//	anything else (5xx, internal error, a proxy's 4xx page)   retryable
func classify(a answer, url, bucket string, n int) error {
	if a.status/100 == 2 {
		return nil
	}
	serr := &ServerError{StatusCode: a.status, Code: a.code, Message: a.msg, URL: url, Bucket: bucket}
	switch {
	case httpout.Unauthorized(a.status):
		return httpout.Retryable(serr, a.header)
	case a.status == http.StatusRequestEntityTooLarge:
		return httpout.TooLarge(serr)
	case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
		return httpout.Retryable(serr, a.header)
	case strings.Contains(a.msg, v3Partial):
		if a.lineErrors < 0 {
			return morse.Permanent(ReasonPartialWrite, fmt.Errorf("%w: %w", errUncounted, serr))
		}
		return v3PartialWrite(a.rejected, serr, n)
	case isV2Partial(a):
		return v2PartialWrite(a.msg, serr, n)
	case a.status == http.StatusNotFound:
		if reason := notFoundReason(a); reason != "" {
			return morse.Permanent(reason, serr)
		}
	case a.status == http.StatusBadRequest || a.status == http.StatusUnprocessableEntity:
		if err := refused(a, serr, n); err != nil {
			return err
		}
	}
	return httpout.Retryable(serr, a.header)
}

// isV2Partial reports an InfluxDB 1.x or 2.x partial write. 2.0.0 to 2.0.3 sent it as a 500
// "internal error" ("unexpected error writing points to database: partial write: ...
// dropped=N"; 422 since 2.0.4): the rejected points never go in however often the batch
// is retried, so a 500 with such a report, its count included, is the partial write it says.
// A 500 without a count is not read as one: a server error is retried.
func isV2Partial(a answer) bool {
	if !strings.Contains(a.msg, v2Partial) {
		return false
	}
	if a.status == http.StatusInternalServerError {
		_, counted := droppedN(a.msg)
		return counted
	}
	return a.status/100 == 4
}

// partial is a partial write of dropped lines. A "partial write" that dropped nothing (2.x
// strips a field named "time" and says so with dropped=0) stored everything: it is still
// reported, so that the server's words reach the log.
func partial(dropped int, reason string, serr *ServerError) error {
	return &morse.PartialWriteError{Dropped: dropped, Reason: reason, Err: serr}
}

// v2PartialWrite reads InfluxDB 2.x's (and 1.x's) partial write:
// "failure writing points to database: partial write: <reason> dropped=N [for database: ...]".
// 1.x never counts the lines it could not parse in N: it names each on a line of its own,
// "unable to parse '...': ...", the first right after "partial write: ", so each such line
// counts one more. 2.x refuses a request with such a line whole, so it has none. morse's
// influxdb_listener counts them in N and quotes the first after "line K: ", which is not
// the start of a line, so its exact N is taken as it is.
func v2PartialWrite(msg string, serr *ServerError, n int) error {
	dropped, ok := droppedN(msg)
	if !ok {
		return morse.Permanent(ReasonPartialWrite, fmt.Errorf("%w: %w", errUncounted, serr))
	}
	rest := strings.TrimSpace(msg[strings.Index(msg, v2Partial)+len(v2Partial):])
	dropped += parseClauses(rest)
	return partial(min(dropped, n), v2Reason(rest), serr)
}

// parseClauses counts the lines of msg that open with "unable to parse '": InfluxDB 1.x and
// 2.x name every line they could not parse so, one to a line.
func parseClauses(msg string) int {
	n := 0
	for line := range strings.SplitSeq(msg, "\n") {
		if strings.HasPrefix(line, parseMsg) {
			n++
		}
	}
	return n
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

// v2Reasons are the words of the reasons of a 1.x/2.x partial write.
var v2Reasons = []struct{ words, reason string }{
	{"field type conflict", morse.ReasonFieldTypeConflict},
	{"points outside retention policy", morse.ReasonBeyondRetention}, // 2.x
	{"points beyond retention policy", morse.ReasonBeyondRetention},  // 1.x
	{parseMsg, morse.ReasonUnableToParse},
	{" is too long, ", ReasonFieldTooLong},
	{"max-values-per-tag limit exceeded", ReasonSchemaLimit},
	{"max-series-per-database limit exceeded", ReasonSchemaLimit},
}

// v2Reason names the reason of a 1.x/2.x partial write, given what follows "partial write:".
// The reason is the one whose words come first, wherever they are: influxdb_listener puts
// "line K: " before them, and a line quoted after them may hold any words.
func v2Reason(msg string) string {
	reason, at := ReasonPartialWrite, len(msg)
	for _, r := range v2Reasons {
		if i := strings.Index(msg, r.words); i >= 0 && i < at {
			reason, at = r.reason, i
		}
	}
	return reason
}

// v3PartialWrite counts each line that InfluxDB 3.0 to 3.4 listed under its own reason, at
// its position. Its line_number is 1-based (influxdb3_write's validator numbers the lines
// of parse_lines, which skips blank lines and comments, as line_idx + 1), and the output
// writes one line per metric and nothing else, so line k is the request's line k-1. When
// a number falls outside the request, which a server of these versions never sends, the
// lines are only counted.
func v3PartialWrite(lines []lineError, serr *ServerError, n int) error {
	exact := true
	for _, l := range lines {
		exact = exact && l.LineNumber >= 1 && l.LineNumber <= n
	}
	var r httpout.Reasons
	for _, l := range lines {
		i := -1
		if exact {
			i = l.LineNumber - 1
		}
		r.Drop(v3Reason(l.ErrorMessage), i).Err = serr
	}
	parts := r.Parts()
	if parts == nil { // an empty list: everything was stored
		return partial(0, ReasonPartialWrite, serr)
	}
	return parts[0]
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

// refused classifies a 400 or 422 that refused the request whole, or returns nil when the answer
// is not InfluxDB's. InfluxDB 2 (code "invalid") parses every line before it writes any
// (http/points/points_parser.go) and refuses the request when one does not parse, naming
// each bad line by its text, never by its number: the request was refused because of some
// of its lines, which the batch writer finds by bisection (morse.RejectedError, Index -1)
// to write the rest. When every line is named there is nothing to find. InfluxDB 1.x and
// influxdb_listener give such an answer without a code only when no line parsed at all.
// A refusal that no line causes (an unknown bucket, a bad token) is never a RejectedError.
func refused(a answer, serr *ServerError, n int) error {
	switch {
	case strings.HasPrefix(a.msg, parseMsg):
		if a.code != "invalid" || parseClauses(a.msg) >= n {
			return morse.Permanent(morse.ReasonUnableToParse, serr)
		}
		return &morse.RejectedError{Index: -1, Reason: morse.ReasonUnableToParse, Err: serr}
	case strings.HasPrefix(a.msg, "field type conflict"):
		// InfluxDB 1.x refused the whole write for points that conflict with each other or
		// with the index (outputs.influxdb's classifier, checked against 1.6.7).
		return &morse.RejectedError{Index: -1, Reason: morse.ReasonFieldTypeConflict, Err: serr}
	}
	if reason := refusedReason(a); reason != "" {
		return morse.Permanent(reason, serr)
	}
	return nil
}

// refusedReason names why InfluxDB refused a request as malformed (400) or unprocessable
// (422), or "" when the answer is not InfluxDB's.
func refusedReason(a answer) string {
	switch {
	case strings.HasPrefix(a.msg, "points beyond retention policy"):
		return morse.ReasonBeyondRetention
	case a.code == "invalid", a.code == "empty value":
		return ReasonInvalid
	case a.code == "unprocessable entity", a.code == "conflict":
		return ReasonUnprocessable
	}
	return ""
}
