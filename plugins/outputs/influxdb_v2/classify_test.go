package influxdbv2

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// verdict is what classify made of an answer, in comparable form.
type verdict struct {
	outcome    morse.WriteOutcome
	reason     string
	dropped    int           // of a partial write
	retryAfter time.Duration // of a retryable error
	split      bool          // writePiece writes the halves (413, or a partial write without a count)
	rejected   bool          // refused whole because of some lines: the batch writer isolates them
}

func verdictOf(err error) verdict {
	v := verdict{outcome: morse.Classify(err)}
	var pw *morse.PartialWriteError
	var pe *morse.PermanentError
	var re *morse.RetryableError
	switch {
	case errors.As(err, &pw):
		v.reason, v.dropped = pw.Reason, pw.Dropped
	case errors.As(err, &pe):
		v.reason = pe.Reason
	case errors.As(err, &re):
		v.retryAfter = re.RetryAfter
	}
	v.split = errors.Is(err, httpout.ErrTooLarge) || errors.Is(err, errUncounted)
	var rej *morse.RejectedError
	v.rejected = errors.As(err, &rej)
	return v
}

// retryV, permV and partV are the verdicts of a retryable error, a permanent one and a
// partial write.
func retryV(after time.Duration) verdict {
	return verdict{outcome: morse.OutcomeRetry, retryAfter: after}
}

func permV(reason string) verdict { return verdict{outcome: morse.OutcomeDropped, reason: reason} }

func partV(reason string, n int) verdict {
	return verdict{outcome: morse.OutcomePartial, reason: reason, dropped: n}
}

// rejV is the verdict of a request refused whole because of some of its lines.
func rejV(reason string) verdict {
	return verdict{outcome: morse.OutcomeDropped, reason: reason, rejected: true}
}

// classifyCases are answers and what classify must make of them.
var classifyCases = []struct {
	name   string
	status int
	header []string // key, value, ...
	body   string
	want   verdict
}{
	{"204", 204, nil, "", verdict{outcome: morse.OutcomeWritten}},
	{"200 with a body", 200, nil, "ok", verdict{outcome: morse.OutcomeWritten}},

	{"2.x type conflict", 422, nil, v2TypeConflict, partV(morse.ReasonFieldTypeConflict, 1)},
	{"2.x beyond retention", 422, nil, v2Retention, partV(morse.ReasonBeyondRetention, 2)},
	{"2.x field too long", 422, nil, v2TooLong, partV(ReasonFieldTooLong, 1)},
	{"2.x time field stripped", 422, nil, v2TimeField, partV(ReasonPartialWrite, 0)},
	{"2.x bucket not found", 404, nil, v2BucketNotFound, permV(ReasonBucketNotFound)},
	{"2.x no bucket", 404, nil, `{"code":"not found","message":"bucket not found"}`, permV(ReasonBucketNotFound)},
	{"2.x organization not found", 404, nil, v2OrgNotFound, permV(ReasonOrganizationNotFound)},
	{"2.x parse error: the bad lines are isolated", 400, nil, v2ParseError, rejV(morse.ReasonUnableToParse)},
	{"2.0.3 partial write as 500", 500, nil, v203TypeConflict, partV(morse.ReasonFieldTypeConflict, 1)},
	{"500 partial write without a count is retried", 500, nil, `{"code":"internal error","message":"partial write: something"}`, retryV(0)},
	{"2.x bad checksum", 400, nil, v2BadChecksum, permV(ReasonInvalid)},
	{"2.x too large", 413, nil, v2TooLarge, verdict{outcome: morse.OutcomeDropped, reason: ReasonTooLarge, split: true}},
	{"2.x unauthorized", 401, nil, v2Unauthorized, retryV(0)},
	{"2.x forbidden", 403, nil, v2Forbidden, retryV(0)},
	{"2.x engine", 500, nil, v2Engine, retryV(0)},
	{"2.x unprocessable, not partial", 422, nil, `{"code":"conflict","message":"x"}`, permV(ReasonUnprocessable)},

	{"429 Retry-After seconds", 429, []string{"Retry-After", "7"}, `{"code":"too many requests","message":"over quota"}`, retryV(7 * time.Second)},
	{"503 Retry-After seconds", 503, []string{"Retry-After", "3"}, "", retryV(3 * time.Second)},
	{"429 without Retry-After", 429, nil, "", retryV(0)},
	{"429 bogus Retry-After is capped", 429, []string{"Retry-After", "99999999"}, "", retryV(time.Hour)},
	{"401 with Retry-After", 401, []string{"Retry-After", "30"}, v2Unauthorized, retryV(30 * time.Second)},

	{"3.x partial without a count", 500, nil, v3PartialUncounted, verdict{outcome: morse.OutcomeDropped, reason: ReasonPartialWrite, split: true}},
	{"3.x partial with its lines: the first line's reason first", 400, nil, v3PartialListed, partV(morse.ReasonFieldTypeConflict, 1)},
	{"3.x schema limit", 422, nil, v3PartialLimit, partV(ReasonSchemaLimit, 1)},
	{"3.x unauthorized", 401, nil, v3Unauthorized, retryV(0)},

	{"1.8 type conflict", 400, nil, v18TypeConflict, partV(morse.ReasonFieldTypeConflict, 1)},
	{"1.8 no database", 404, nil, v18NoDatabase, permV(ReasonBucketNotFound)},
	{"1.8 parse clause counted", 400, nil, v18ParsePartial, partV(morse.ReasonUnableToParse, 1)},
	{"1.8 parse clauses counted, one per line", 400, nil, v18ParsePartial2, partV(morse.ReasonUnableToParse, 2)},
	{"1.8 parse error: no line parsed", 400, nil, v18ParseError, permV(morse.ReasonUnableToParse)},
	{"1.8 type conflict refusing the write", 400, nil, v18ConflictRefused, rejV(morse.ReasonFieldTypeConflict)},
	{"listener partial: dropped=N is exact", 400, nil, listenerPartial, partV(morse.ReasonUnableToParse, 1)},
	{"listener: no line accepted", 400, nil, listenerRefused, permV(morse.ReasonUnableToParse)},
	{"1.8 partial without a count", 400, nil, `{"error":"partial write: something"}`, verdict{outcome: morse.OutcomeDropped, reason: ReasonPartialWrite, split: true}},

	{"a proxy's 404 page", 404, nil, "404 page not found", retryV(0)},
	{"2.x code in the header only", 404, []string{"X-Platform-Error-Code", "not found"}, "", permV(ReasonNotFound)},
	{"a proxy's 400 page", 400, nil, "<html>Bad Request</html>", retryV(0)},
	{"405", 405, nil, `{"code":"method not allowed","message":"x"}`, retryV(0)},
	{"502 from a proxy", 502, nil, "Bad Gateway", retryV(0)},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tc.header); i += 2 {
				h.Set(tc.header[i], tc.header[i+1])
			}
			a := readAnswer(tc.status, h, strings.NewReader(tc.body), answerLimit(1000))
			err := classify(a, "http://x/api/v2/write", "b", 10)
			require.Equal(t, tc.want, verdictOf(err), "%v", err)
			if tc.status/100 != 2 {
				var serr *ServerError
				require.True(t, errors.As(err, &serr), "every error wraps the server's answer")
				require.Equal(t, tc.status, serr.StatusCode)
			}
		})
	}
}

// A partial write never counts more dropped lines than the request had.
func TestClassifyCapsDropped(t *testing.T) {
	a := readAnswer(422, http.Header{}, strings.NewReader(v2Retention), answerLimit(100))
	want := verdict{outcome: morse.OutcomePartial, reason: morse.ReasonBeyondRetention, dropped: 1}
	require.Equal(t, want, verdictOf(classify(a, "u", "b", 1)))
}

// The Retry-After of an HTTP date is the time until then.
func TestClassifyRetryAfterDate(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
	err := classify(readAnswer(503, h, strings.NewReader(""), answerLimit(0)), "u", "b", 1)
	v := verdictOf(err)
	require.Equal(t, morse.OutcomeRetry, v.outcome)
	require.InDelta(t, 90, v.retryAfter.Seconds(), 2)
}

// An answer longer than the limit is not decoded whole: a listed partial write then counts
// as one without a count, which the output resolves by writing halves.
func TestReadAnswerLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"error":"partial write of line protocol occurred","data":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"error_message":"No fields were provided","line_number":%d,"original_line":"m 1700000000000000"}`, i+1)
	}
	b.WriteString("]}")
	require.Greater(t, int64(b.Len()), answerLimit(10))
	a := readAnswer(400, http.Header{}, strings.NewReader(b.String()), answerLimit(10))
	require.Equal(t, -1, a.lineErrors)
	require.Contains(t, a.msg, "partial write of line protocol occurred")
	require.True(t, verdictOf(classify(a, "u", "b", 10)).split)

	a = readAnswer(400, http.Header{}, strings.NewReader(b.String()), answerLimit(2000*20))
	require.Equal(t, 2000, a.lineErrors, "within the limit for 2000 lines of 20 bytes, every entry counts")
}
