package iotdb

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// Drop reasons of this output beyond the shared ones in package morse.
const (
	ReasonIllegalPath    = "illegal_path"   // 509: a device or measurement IoTDB cannot name
	ReasonMetadata       = "metadata_error" // 507 for another cause than a type
	ReasonInvalid        = "invalid"        // 303, 305, 606 "unsupported data type", 415
	ReasonSchemaLimit    = "schema_limit"   // 502, 526: series or schema quota
	ReasonTooLarge       = httpout.ReasonTooLarge
	ReasonNotFoundDevice = "path_not_exist" // 508
)

// IoTDB's status codes (org.apache.iotdb.rpc.TSStatusCode, 2.0.1-beta) that classify reads.
const (
	codeSuccess          = 200
	codeIllegalParameter = 303
	codeInternalError    = 305
	codeDatabaseNotExist = 500
	codeSeriesOverflow   = 502
	codeMetadataError    = 507
	codePathNotExist     = 508
	codeIllegalPath      = 509
	codeSchemaQuota      = 526
	codeWriteReject      = 606
	codeOutOfTTL         = 607
	codeTypeMismatch     = 614
	codeInitAuth         = 800
	codeWrongPassword    = 801
	codeNotLogin         = 802
	codeNoPermission     = 803
	codeUserNotExist     = 804
	codeNotHasPrivilege  = 811
)

// answer is what IoTDB said to one request: the HTTP status, its JSON code and message (code
// 0 when the body was not IoTDB's JSON, such as Jetty's HTML error page), and the headers.
type answer struct {
	status int
	code   int
	msg    string
	header http.Header
}

func readAnswer(resp *http.Response) answer {
	a := answer{status: resp.StatusCode, header: resp.Header}
	body := httpout.ReadAnswer(resp.Body, httpout.MaxMessage)
	var st struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &st) == nil && st.Code != 0 {
		a.code, a.msg = st.Code, st.Message
	} else {
		a.msg = htmlMessage(body)
	}
	return a
}

// htmlMessage is the gist of a body that is not IoTDB's JSON: Jetty's error page names the
// error in its <title>; anything else is kept as text, at most 512 bytes of it.
func htmlMessage(body []byte) string {
	s := string(body)
	if i := strings.Index(s, "<title>"); i >= 0 {
		if j := strings.Index(s[i:], "</title>"); j >= 0 {
			return strings.TrimSpace(s[i+len("<title>") : i+j])
		}
	}
	s = strings.ToValidUTF8(strings.TrimSpace(s), "")
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// ServerError is an answer other than success, or a request that got none. Every error that
// Write returns for a tablet wraps one.
type ServerError struct {
	StatusCode int    // the HTTP status; 0 when no answer came
	Code       int    // IoTDB's status code; 0 when the answer was not IoTDB's JSON
	Message    string // IoTDB's message, or the gist of another body
	URL        string
	Device     string
	Err        error // the transport's error when no answer came
}

// Error names the endpoint, the device, and what IoTDB said.
func (e *ServerError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("iotdb %s (device %s): %v", e.URL, e.Device, e.Err)
	}
	if e.Code != 0 {
		return fmt.Sprintf("iotdb %s (device %s): code %d: %s", e.URL, e.Device, e.Code, e.Message)
	}
	return fmt.Sprintf("iotdb %s (device %s): %d: %s", e.URL, e.Device, e.StatusCode, httpout.Message(e.StatusCode, e.Message))
}

// Unwrap returns the transport's error.
func (e *ServerError) Unwrap() error { return e.Err }

// Is reports a refusal of the credentials or of a privilege as morse.ErrUnauthorized, so
// that the batch writer applies unauthorized_retry_max_age to it.
func (e *ServerError) Is(target error) bool {
	return target == morse.ErrUnauthorized && unauthorized(e.StatusCode, e.Code)
}

func unauthorized(status, code int) bool {
	switch code {
	case codeInitAuth, codeWrongPassword, codeNotLogin, codeNoPermission, codeUserNotExist, codeNotHasPrivilege:
		return true
	}
	return httpout.Unauthorized(status)
}

// classify decides what IoTDB's answer to one tablet means, by its JSON code first:
//
//	code                                         result
//	200                                          nil (stored)
//	800, 801, 802, 803, 804, 811 (or HTTP 401/403) retryable, unauthorized: credentials can be fixed
//	507 "Fail to insert measurements [a, b] ..." partial: the other measurements are stored; the
//	                                             rows with a value in a, b are dropped, at their
//	                                             positions (field_type_conflict when "not consistent";
//	                                             schema_limit when it carries a 502 or 526 status)
//	509 naming the device                        permanent illegal_path, the tablet's rows
//	509 naming a measurement, 303, 305, 614,     rejected: the batch writer isolates the metrics
//	607, 606 "unsupported data type", 508          (one metric: permanent)
//	500 (database), 502, 526                     permanent for the tablet's rows
//	any other code (600 read-only, 606 memory,   retryable, after Retry-After when given
//	  611 disk, 7xx, 9xx, 1xxx)
//	no JSON: HTTP status by httpout.ClassOf      5xx (Jetty's HTML 500), 404: retryable; 413: rejected
//	                                             request_too_large; other 4xx: permanent invalid
func classify(a answer, url string, tab *tablet, batch []morse.Metric, tagsAsFields bool) error {
	if a.code == codeSuccess && a.status/100 == 2 {
		return nil
	}
	serr := &ServerError{StatusCode: a.status, Code: a.code, Message: a.msg, URL: url, Device: tab.device}
	rows := len(tab.positions)
	switch {
	case unauthorized(a.status, a.code):
		return httpout.Retryable(serr, a.header)
	case a.code == codeMetadataError:
		return typeConflict(a.msg, serr, tab, batch, tagsAsFields)
	case a.code == codeIllegalPath && strings.HasPrefix(a.msg, tab.device+" "):
		return morse.Permanent(ReasonIllegalPath, serr)
	case a.code == codeDatabaseNotExist:
		return morse.Permanent(morse.ReasonDatabaseNotFound, serr)
	case a.code == codeSeriesOverflow || a.code == codeSchemaQuota:
		return morse.Permanent(ReasonSchemaLimit, serr)
	case a.code != 0:
		if reason := refusedReason(a); reason != "" {
			return rejected(reason, serr, rows)
		}
		return httpout.Retryable(serr, a.header)
	}
	switch httpout.ClassOf(a.status) {
	case httpout.ClassStored: // a 2xx without IoTDB's JSON: not IoTDB, or a proxy
		return httpout.Retryable(serr, a.header)
	case httpout.ClassTooLarge:
		return rejected(ReasonTooLarge, serr, rows)
	case httpout.ClassRefused:
		return morse.Permanent(ReasonInvalid, serr)
	}
	return httpout.Retryable(serr, a.header)
}

// refusedReason names why IoTDB refused a tablet because of what some of its metrics hold,
// or "" when the code says nothing of the kind.
func refusedReason(a answer) string {
	switch a.code {
	case codeIllegalPath:
		return ReasonIllegalPath
	case codeIllegalParameter, codeInternalError:
		return ReasonInvalid
	case codeWriteReject:
		if strings.Contains(a.msg, "unsupported data type") {
			return ReasonInvalid
		}
	case codeTypeMismatch:
		return morse.ReasonFieldTypeConflict
	case codeOutOfTTL:
		return morse.ReasonBeyondRetention
	case codePathNotExist:
		return ReasonNotFoundDevice
	}
	return ""
}

// rejected is a tablet refused whole because of some of its metrics: the batch writer finds
// them and writes the rest. A tablet of one metric is that metric, refused for good.
func rejected(reason string, serr *ServerError, rows int) error {
	if rows == 1 {
		return morse.Permanent(reason, serr)
	}
	return &morse.RejectedError{Index: -1, Reason: reason, Err: serr}
}

// failPrefix opens the message of a 507 that names the measurements IoTDB refused:
// "Fail to insert measurements [a, b] caused by [...]".
const failPrefix = "Fail to insert measurements ["

// typeConflict is the partial write of a 507: IoTDB stored every other measurement of the
// tablet, and refused the ones it names, each in every row. A row that holds a value of a
// refused measurement lost it and is counted as dropped, at its position; the others were
// stored whole. When the names cannot be read, every row of the tablet is counted.
func typeConflict(msg string, serr *ServerError, tab *tablet, batch []morse.Metric, tagsAsFields bool) error {
	reason := ReasonMetadata
	switch {
	case strings.Contains(msg, "is not consistent") || strings.Contains(msg, "data type"):
		reason = morse.ReasonFieldTypeConflict
	case strings.Contains(msg, "TSStatus(code:502") || strings.Contains(msg, "TSStatus(code:526"):
		// A 507 that carries a series quota's status: IoTDB 2.0.1-beta's answer to new
		// series past its memory for schemas ("Too many timeseries in memory").
		reason = ReasonSchemaLimit
	}
	failed, ok := failedMeasurements(msg, tab)
	var idx []int
	for k, pos := range tab.positions {
		if !ok || carries(batch[pos], failed, tagsAsFields) {
			idx = append(idx, k) // k: the position within the tablet, which Tally.AddAt maps
		}
	}
	if len(idx) == 0 { // named columns none of the rows holds: read as the whole tablet
		return morse.Permanent(reason, serr)
	}
	return &morse.PartialWriteError{Dropped: len(idx), Reason: reason, Err: serr, Indices: idx}
}

// failedMeasurements reads the measurements a 507 names, keeping only the tablet's own
// columns; ok is false unless every name is one.
func failedMeasurements(msg string, tab *tablet) (names []string, ok bool) {
	i := strings.Index(msg, failPrefix)
	if i < 0 {
		return nil, false
	}
	rest := msg[i+len(failPrefix):]
	j := strings.Index(rest, "] caused by")
	if j < 0 {
		return nil, false
	}
	for name := range strings.SplitSeq(rest[:j], ", ") {
		if tab.find(name, 0) < 0 {
			return nil, false
		}
		names = append(names, name)
	}
	return names, len(names) > 0
}

// carries reports whether m put a value into one of the named columns.
func carries(m morse.Metric, names []string, tagsAsFields bool) bool {
	for _, f := range m.Fields() {
		if f.Value.Type() == morse.TypeFloat && !finite(f.Value.Float()) {
			continue
		}
		for _, n := range names {
			if f.Key == n {
				return true
			}
		}
	}
	if tagsAsFields {
		for _, t := range m.Tags() {
			for _, n := range names {
				if t.Key == n {
					return true
				}
			}
		}
	}
	return false
}
