package questdb

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// ServerError is an answer of QuestDB's /write other than success, with the fields of its
// error JSON, for example
//
//	400 {"code":"invalid","message":"failed to parse line protocol:errors encountered on
//	line(s):\nerror in line 2: table: tq, column: v; cast error from protocol type: STRING
//	to column type: LONG","line":2,"errorId":"…"}
type ServerError struct {
	StatusCode int
	Code       string // QuestDB's code, such as "invalid"
	Message    string // QuestDB's message, or the body's first 64 KiB when it is not JSON
	Line       int    // the 1-based line of the request that QuestDB refused; 0 if none
	ErrorID    string // QuestDB's id of the error, to find it in the server's log
	URL        string

	retryAfter time.Duration
}

// Is makes a 401 or 403 match morse.ErrUnauthorized, so that unauthorized_retry_max_age
// applies to it.
func (e *ServerError) Is(target error) bool {
	return target == morse.ErrUnauthorized && httpout.Unauthorized(e.StatusCode)
}

// Error names the endpoint, the status and QuestDB's words.
func (e *ServerError) Error() string {
	msg := httpout.Message(e.StatusCode, e.Message)
	s := fmt.Sprintf("questdb %s: %d: %s", e.URL, e.StatusCode, msg)
	if e.ErrorID != "" {
		s += " (errorId " + e.ErrorID + ")"
	}
	return s
}

// readAnswer reads a response; nil-free: a success gives a ServerError with a 2xx status.
func readAnswer(url string, resp *http.Response) *ServerError {
	e := &ServerError{StatusCode: resp.StatusCode, URL: url}
	body := httpout.ReadAnswer(resp.Body, httpout.MaxMessage)
	if resp.StatusCode/100 == 2 {
		return e
	}
	var j struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Line    int    `json:"line"`
		ErrorID string `json:"errorId"`
	}
	if json.Unmarshal(body, &j) == nil && (j.Message != "" || j.Code != "") {
		e.Code, e.Message, e.Line, e.ErrorID = j.Code, j.Message, j.Line, j.ErrorID
	} else {
		e.Message = strings.TrimSpace(string(body))
	}
	e.retryAfter = httpout.RetryAfter(resp.Header, time.Now())
	return e
}

// verdict is what an answer means for the request.
type verdict struct {
	ok, retry, tooLarge bool
	line                int    // the bad line, when QuestDB named one
	reason              string // why the line or the request is dropped
	column, fromType    string // of a type-level cast error: the column and the ILP type refused
}

// castError reads QuestDB's message for a value of the wrong type for its column.
var castError = regexp.MustCompile(`column: ([^;]+); cast error from protocol type: ([A-Z0-9_]+) to column type`)

// verdict classifies an answer by the rule: drop only what retrying could never store.
//
//	status    QuestDB's answer                                   result
//	2xx       -                                                  stored
//	400       line N: "cast error from protocol type: X to ..."   line N (and, unless X is STRING,
//	                                                             every line writing X to that
//	                                                             column) field_type_conflict
//	400       line N: "invalid column name", "invalid table       line N invalid_name
//	          name", "INVALID_TABLE_NAME"
//	400       line N: "designated timestamp before 1970-01-01",   line N unsupported_value
//	          "is out bounds of column type"
//	400       "table does not exist, creating new tables is      the request (one table's lines)
//	          disabled"                                          table_not_found
//	400       line N: anything else ("Could not parse ...")       line N unable_to_parse
//	400       no line named (e.g. "unsupported precision")        the request, unable_to_parse
//	413       -                                                  sent in halves; one line alone:
//	                                                             request_too_large
//	401, 403  -                                                  retryable: credentials can be fixed
//	                                                             (unauthorized_retry_max_age)
//	404, 408  -                                                  retryable: a proxy, or /write off
//	421       "not accepting writes"                             retryable: a read-only server or
//	                                                             a replica, until it is not
//	429, 5xx  (Retry-After honoured)                             retryable
//	other 4xx -                                                  the request, permanent
func (e *ServerError) verdict() verdict {
	switch s := e.StatusCode; {
	case s/100 == 2:
		return verdict{ok: true}
	case s == http.StatusRequestEntityTooLarge:
		return verdict{tooLarge: true, reason: ReasonTooLarge}
	case s == http.StatusBadRequest && strings.Contains(e.Message, "table does not exist"):
		// Requests are one table each, and every line of it would be refused the same way.
		return verdict{reason: ReasonTableNotFound}
	case s == http.StatusBadRequest && e.Line > 0:
		v := verdict{line: e.Line, reason: lineReason(e.Message)}
		// Whether a string goes into a UUID, IPV4, CHAR or other such column depends on
		// the string, so a cast error from STRING takes out its own line only.
		if m := castError.FindStringSubmatch(e.Message); m != nil && m[2] != "STRING" {
			v.column, v.fromType = strings.TrimSpace(m[1]), m[2]
		}
		return v
	case s == http.StatusBadRequest:
		return verdict{reason: morse.ReasonUnableToParse}
	case s == http.StatusUnauthorized, s == http.StatusForbidden, s == http.StatusNotFound,
		s == http.StatusRequestTimeout, s == http.StatusMisdirectedRequest, s == http.StatusTooManyRequests, s >= 500:
		return verdict{retry: true}
	}
	return verdict{reason: morse.ReasonPermanent}
}

func lineReason(msg string) string {
	switch {
	case strings.Contains(msg, "cast error"):
		return morse.ReasonFieldTypeConflict
	case strings.Contains(msg, "invalid column name"), strings.Contains(msg, "invalid table name"),
		strings.Contains(msg, "INVALID_TABLE_NAME"):
		return ReasonInvalidName
	case strings.Contains(msg, "designated timestamp before"), strings.Contains(msg, "out bounds of column type"):
		return ReasonUnsupportedValue
	}
	return morse.ReasonUnableToParse
}
