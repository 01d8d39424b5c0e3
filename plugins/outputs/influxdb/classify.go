package influxdb

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// Drop reasons of this output beyond the shared ones in package morse.
const (
	ReasonMaxValuesPerTag         = "max_values_per_tag"
	ReasonMaxSeriesPerDatabase    = "max_series_per_database"
	ReasonRetentionPolicyNotFound = "retention_policy_not_found"
	ReasonTooLarge                = httpout.ReasonTooLarge
	ReasonPartialWrite            = "partial_write" // a partial write whose reason is not known
)

// ServerError is an answer of the server other than success. Every error that Write returns
// for an answer wraps one, so callers can read the status and the server's own words.
type ServerError struct {
	StatusCode int
	Message    string // the server's message, its first 64 KiB
	URL        string // the write endpoint, without credentials
}

// Is reports a 401 or 403 as morse.ErrUnauthorized, so that the batch writer applies
// unauthorized_retry_max_age to it.
func (e *ServerError) Is(target error) bool {
	return target == morse.ErrUnauthorized && httpout.Unauthorized(e.StatusCode)
}

// Error names the endpoint, the status and the server's message.
func (e *ServerError) Error() string {
	msg := httpout.Message(e.StatusCode, e.Message)
	if e.URL == "" {
		return fmt.Sprintf("influxdb: %d: %s", e.StatusCode, msg)
	}
	return fmt.Sprintf("influxdb %s: %d: %s", e.URL, e.StatusCode, msg)
}

// classify decides what an answer to a write of batchLen lines means. It is the table below;
// each row was checked against a real InfluxDB 1.6.7 unless marked otherwise, and
// testdata/influxdb/classifier.md gives the reasons at length. The rule: a batch is dropped
// only if retrying it could never succeed; everything else is retried.
//
//	status  message (server's words)                      result
//	2xx     -                                             nil (stored)
//	any     "... hinted handoff queue not empty"          nil: accepted and queued (Enterprise)
//	4xx     "partial write: <reason> dropped=N"           partial, N + one per "unable to parse"
//	                                                      clause (InfluxDB never counts those)
//	400     "unable to parse '...': ..." (no prefix)      permanent unable_to_parse: nothing stored
//	404     "database not found: ..."                     permanent database_not_found
//	500     "retention policy not found: ..."             permanent retention_policy_not_found
//	4xx     "field type conflict ..." (no prefix)         rejected field_type_conflict: nothing stored
//	                                                      because of some points, which the batch
//	                                                      writer isolates (morse.RejectedError)
//	4xx     "points beyond retention policy" (no prefix)  permanent beyond_retention_policy
//	4xx     "max-values-per-tag limit exceeded" / "max-series-per-database limit exceeded"
//	                                                      permanent max_values_per_tag / max_series_per_database
//	413     "Request Entity Too Large"                    split the batch and write the halves;
//	                                                      permanent request_too_large for one line
//	429/503 (Retry-After honoured)                        retryable
//	401/403 "authorization failed", "... not authorized"  retryable: credentials can be fixed
//	5xx     "engine: cache-max-memory-size exceeded",     retryable (writes are idempotent, so a
//	        "timeout", "write failed", anything           write that did land is only rewritten)
//	other   "database is required", "unexpected EOF",    retryable: a proxy or a corrupted body;
//	        a proxy's 404 page, ...                        the operator can fix it while data waits
func classify(status int, body []byte, header http.Header, batchLen int) error {
	return classifyAnswer(readAnswer(status, header, bytes.NewReader(body), 0), "", batchLen)
}

// classifyAnswer is classify for an answer already read; url names the endpoint in errors.
func classifyAnswer(a answer, url string, batchLen int) error {
	if a.status/100 == 2 {
		return nil
	}
	serr := &ServerError{StatusCode: a.status, Message: a.msg, URL: url}
	msg := a.msg
	switch {
	case strings.Contains(msg, "hinted handoff queue not empty"):
		return nil
	case httpout.Unauthorized(a.status):
		// Before any message test: 401 says "unable to parse authentication credentials".
		return httpout.Retryable(serr, a.header)
	case a.status/100 == 4 && partialReport(msg) != "":
		return partial(a, serr, batchLen)
	case a.status == http.StatusBadRequest && strings.HasPrefix(msg, parsePrefix) && a.v2:
		// InfluxDB 2 parses a whole request before it writes any of it: nothing is stored,
		// because of the lines it names, which the batch writer isolates.
		return &morse.RejectedError{Index: -1, Reason: morse.ReasonUnableToParse, Err: serr}
	case a.status == http.StatusBadRequest && strings.HasPrefix(msg, parsePrefix):
		return morse.Permanent(morse.ReasonUnableToParse, serr)
	case strings.HasPrefix(msg, "database not found"):
		return morse.Permanent(morse.ReasonDatabaseNotFound, serr)
	case strings.HasPrefix(msg, "retention policy not found"):
		return morse.Permanent(ReasonRetentionPolicyNotFound, serr)
	case a.status == http.StatusRequestEntityTooLarge:
		// The halves are written instead (httpout.ErrTooLarge, see InfluxDB.writeSplit).
		return httpout.TooLarge(serr)
	case a.status/100 == 4 && reasonOf(msg) == morse.ReasonFieldTypeConflict:
		// InfluxDB refused the whole write for points that conflict with each other or with
		// the index: the others can be written without them.
		return &morse.RejectedError{Index: -1, Reason: morse.ReasonFieldTypeConflict, Err: serr}
	case a.status/100 == 4 && reasonOf(msg) != ReasonPartialWrite:
		return morse.Permanent(reasonOf(msg), serr)
	}
	return httpout.Retryable(serr, a.header)
}

// partial builds the error of a partial write. The dropped points are the engine's N plus
// one per line that did not parse. When the server says both, both are counted; when it
// leaves something out (InfluxDB 1.6 reports only the engine's error when a batch has both
// parse errors and, say, a type conflict), only what it says can be counted.
func partial(a answer, serr *ServerError, batchLen int) error {
	reason := reasonOf(partialReport(a.msg))
	dropped := a.parseErrors
	switch {
	case a.dropped >= 0:
		dropped += a.dropped
	case dropped == 0:
		// A partial write without a count is not something InfluxDB sends; without a count
		// the whole batch is reported, since nothing says which points were kept.
		dropped = batchLen
	}
	if batchLen > 0 {
		dropped = min(dropped, batchLen)
	}
	return &morse.PartialWriteError{Dropped: dropped, Reason: reason, Err: serr}
}

// partialReport is what follows "partial write: " in msg: at its start, as InfluxDB 1.x
// writes it, or after "failure writing points to database: ", as InfluxDB 2 does on its
// 1.x /write (422). It is empty when msg reports no partial write.
func partialReport(msg string) string {
	if rest, ok := strings.CutPrefix(msg, partialPrefix); ok {
		return rest
	}
	if _, rest, ok := strings.Cut(msg, ": "+partialPrefix); ok {
		return rest
	}
	return ""
}

// reasonOf names the drop reason of a message (without "partial write: ").
func reasonOf(msg string) string {
	for _, r := range reasons {
		if strings.HasPrefix(msg, r.prefix) {
			return r.reason
		}
	}
	if strings.Contains(msg, "points outside retention policy") { // InfluxDB 2: "dropped N points ..."
		return morse.ReasonBeyondRetention
	}
	return ReasonPartialWrite
}

var reasons = []struct{ prefix, reason string }{
	{"field type conflict", morse.ReasonFieldTypeConflict},
	{"points beyond retention policy", morse.ReasonBeyondRetention},
	{parsePrefix, morse.ReasonUnableToParse},
	{"max-values-per-tag limit exceeded", ReasonMaxValuesPerTag},
	{"max-series-per-database limit exceeded", ReasonMaxSeriesPerDatabase},
	{"database not found", morse.ReasonDatabaseNotFound},
}
