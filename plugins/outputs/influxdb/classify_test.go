package influxdb

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// jsonBody is how InfluxDB 1.6.7 writes an error: {"error":"..."} and a newline.
func jsonBody(escaped string) []byte { return []byte(`{"error":"` + escaped + `"}` + "\n") }

// want is the classification expected for one answer.
type want struct {
	outcome morse.WriteOutcome
	reason  string        // of the partial or permanent error
	dropped int           // of a partial write
	after   time.Duration // Retry-After of a retryable error
	tooBig  bool          // 413: the batch must be split
}

// classifyCase is one answer and its expected class.
type classifyCase struct {
	name   string
	status int
	body   []byte
	header http.Header
	batch  int
	want   want
}

var retryAfterDate = time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)

var classifyCases = []classifyCase{
	{"success", 204, nil, nil, 3, want{outcome: morse.OutcomeWritten}},
	{"missing database", 404, jsonBody(`database not found: \"nope\"`), nil, 1,
		want{outcome: morse.OutcomeDropped, reason: morse.ReasonDatabaseNotFound}},
	{"string into a float field", 400,
		jsonBody(`partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=1`), nil, 3,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1}},
	{"beyond retention policy", 400, jsonBody(`partial write: points beyond retention policy dropped=1`), nil, 1,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonBeyondRetention, dropped: 1}},
	{"one malformed line among valid ones: dropped=0 but one line lost", 400,
		jsonBody(`partial write: unable to parse 'p v=2 garbage': bad timestamp dropped=0`), nil, 3,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, dropped: 1}},
	{"two malformed lines among valid ones", 400,
		jsonBody(`partial write: unable to parse 'pp v=2 x': bad timestamp\nunable to parse 'pp v=4 y': bad timestamp dropped=0`), nil, 5,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, dropped: 2}},
	{"missing field value among valid ones", 400,
		jsonBody(`partial write: unable to parse 'q v= 2': missing field value dropped=0`), nil, 2,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, dropped: 1}},
	{"malformed line and type conflict: the server reports only the conflict", 400,
		jsonBody(`partial write: field type conflict: input field \"v\" on measurement \"mx\" is type string, already exists as type float dropped=1`), nil, 4,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1}},
	{"only malformed lines: nothing stored", 400, jsonBody(`unable to parse 'm v=1 garbage': bad timestamp`), nil, 1,
		want{outcome: morse.OutcomeDropped, reason: morse.ReasonUnableToParse}},
	{"only malformed lines, two", 400,
		jsonBody(`unable to parse 'm v=1 garbage': bad timestamp\nunable to parse 'm v=2 garbage2': bad timestamp`), nil, 2,
		want{outcome: morse.OutcomeDropped, reason: morse.ReasonUnableToParse}},
	{"unsigned integer without server support", 400, jsonBody(`unable to parse 'u v=1u 1': invalid number`), nil, 1,
		want{outcome: morse.OutcomeDropped, reason: morse.ReasonUnableToParse}},
	{"max-values-per-tag", 400,
		jsonBody(`partial write: max-values-per-tag limit exceeded (2/2): measurement=\"m\" tag=\"t\" value=\"c\" dropped=1`), nil, 5,
		want{outcome: morse.OutcomePartial, reason: ReasonMaxValuesPerTag, dropped: 1}},
	{"max-series-per-database", 400, jsonBody(`partial write: max-series-per-database limit exceeded: (2) dropped=3`), nil, 3,
		want{outcome: morse.OutcomePartial, reason: ReasonMaxSeriesPerDatabase, dropped: 3}},
	{"retention policy not found", 500, jsonBody(`retention policy not found: nope`), nil, 1,
		want{outcome: morse.OutcomeDropped, reason: ReasonRetentionPolicyNotFound}},
	{"body over max-body-size", 413, jsonBody(`Request Entity Too Large`), nil, 20,
		want{outcome: morse.OutcomeDropped, reason: ReasonTooLarge, tooBig: true}},
	{"write cache full", 500, jsonBody(`engine: cache-max-memory-size exceeded: (1600/1024)`), nil, 100,
		want{outcome: morse.OutcomeRetry}},
	{"no credentials", 401, jsonBody(`unable to parse authentication credentials`),
		http.Header{"Www-Authenticate": {`Basic realm="InfluxDB"`}}, 1, want{outcome: morse.OutcomeRetry}},
	{"wrong password", 401, jsonBody(`authorization failed`), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"no write privilege", 403, jsonBody(`\"bob\" user is not authorized to write to database \"x\"`), nil, 1,
		want{outcome: morse.OutcomeRetry}},
	{"database is required", 400, jsonBody(`database is required`), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"invalid consistency level", 400, jsonBody(`invalid consistency level`), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"corrupted gzip body", 400, jsonBody(`unexpected EOF`), nil, 1, want{outcome: morse.OutcomeRetry}},
	// Not 1.6.7: its throttler (text/plain, from the source), Enterprise, proxies.
	{"throttled, queue full, Retry-After seconds", 503, []byte("request throttled, queue full\n"),
		http.Header{"Retry-After": {"7"}}, 1, want{outcome: morse.OutcomeRetry, after: 7 * time.Second}},
	{"429 with an HTTP-date Retry-After", 429, []byte("slow down"),
		http.Header{"Retry-After": {retryAfterDate}}, 1, want{outcome: morse.OutcomeRetry, after: 90 * time.Second}},
	{"coordinator timeout", 500, jsonBody(`timeout`), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"write failed", 500, jsonBody(`write failed`), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"hinted handoff queue not empty: accepted", 500, jsonBody(`write failed: hinted handoff queue not empty`), nil, 1,
		want{outcome: morse.OutcomeWritten}},
	{"proxy page", 502, []byte("<html><body>Bad Gateway</body></html>"), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"proxy 404 on a wrong path", 404, []byte("404 page not found\n"), nil, 1, want{outcome: morse.OutcomeRetry}},
	{"2.x-style body", 400, []byte(`{"code":"invalid","message":"partial write: points beyond retention policy dropped=2"}`), nil, 4,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonBeyondRetention, dropped: 2}},
	// InfluxDB 2 on its 1.x /write (testdata/influxdb/v2-answers.md), not 1.6.7.
	{"2.x type conflict (422)", 422, []byte(`{"code":"unprocessable entity","message":"failure writing points to database: partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=1"}`), nil, 3,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1}},
	{"2.x beyond retention (422)", 422, []byte(`{"code":"unprocessable entity","message":"failure writing points to database: partial write: dropped 2 points outside retention policy of duration 1h0m0s - oldest point m at 2020-01-01T00:00:00Z dropped because it violates a Retention Policy Lower Bound at 2026-11-23T18:00:00Z, newest point m at 2020-01-01T00:00:01Z dropped because it violates a Retention Policy Lower Bound at 2026-11-23T18:00:00Z dropped=2 for database: 0a1b2c3d4e5f6a7b for retention policy: autogen"}`), nil, 5,
		want{outcome: morse.OutcomePartial, reason: morse.ReasonBeyondRetention, dropped: 2}},
}

// TestClassify2xParseError: InfluxDB 2 refuses a whole request for a line it cannot parse
// and stores nothing; the answer is a rejection, which the batch writer isolates, where
// 1.x's (sent only when no line parsed) is a drop.
func TestClassify2xParseError(t *testing.T) {
	err := classify(400, []byte(`{"code":"invalid","message":"unable to parse 'm v=1 abc': bad timestamp"}`), nil, 3)
	var rej *morse.RejectedError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, morse.ReasonUnableToParse, rej.Reason)
	err = classify(400, []byte(`{"error":"unable to parse 'm v=1 abc': bad timestamp"}`), nil, 1)
	require.False(t, errors.As(err, &rej))
	requireClass(t, err, want{outcome: morse.OutcomeDropped, reason: morse.ReasonUnableToParse})
}

// TestWriteTimeoutLeavesRoom: a write is bounded by timeout, but never below 30 s, so that a
// first URL that never answers leaves time for the next.
func TestWriteTimeoutLeavesRoom(t *testing.T) {
	o := New()
	o.Timeout = morse.Duration(5 * time.Second)
	require.Equal(t, 30*time.Second, o.WriteTimeout())
	o.Timeout = morse.Duration(45 * time.Second)
	require.Equal(t, 45*time.Second, o.WriteTimeout())
}

// TestClassify runs the classifier over the exact answers of a real InfluxDB 1.6.7 (see
// internal/testserver/influxdb_test.go and testdata/influxdb/classifier.md), and over the
// answers only other servers or proxies give, marked "not 1.6.7".
func TestClassify(t *testing.T) {
	for _, tt := range classifyCases {
		t.Run(tt.name, func(t *testing.T) {
			err := classify(tt.status, tt.body, tt.header, tt.batch)
			requireClass(t, err, tt.want)
			if err != nil {
				var serr *ServerError
				require.ErrorAs(t, err, &serr, "every error for an answer wraps the answer")
				require.Equal(t, tt.status, serr.StatusCode)
			}
		})
	}
}

func requireClass(t *testing.T, err error, w want) {
	t.Helper()
	require.Equal(t, w.outcome, morse.Classify(err), "error: %v", err)
	switch w.outcome {
	case morse.OutcomePartial:
		var pw *morse.PartialWriteError
		require.ErrorAs(t, err, &pw)
		require.Equal(t, w.dropped, pw.Dropped, "dropped")
		require.Equal(t, w.reason, pw.Reason)
	case morse.OutcomeDropped:
		var pe *morse.PermanentError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, w.reason, pe.Reason)
		require.Equal(t, w.tooBig, errors.Is(err, httpout.ErrTooLarge))
	case morse.OutcomeRetry:
		var re *morse.RetryableError
		require.ErrorAs(t, err, &re)
		require.InDelta(t, float64(w.after), float64(re.RetryAfter), float64(2*time.Second))
	}
}

// TestClassifyManyParseErrors checks that parse clauses are counted over a message far longer
// than what is kept: InfluxDB quotes every bad line.
func TestClassifyManyParseErrors(t *testing.T) {
	const bad = 5000
	var b strings.Builder
	b.WriteString(`{"error":"partial write: `)
	for i := range bad {
		if i > 0 {
			b.WriteString(`\n`)
		}
		// Quotes, backslashes and a \u escape, as Go's JSON encoder writes them.
		b.WriteString(`unable to parse 'm,host=a\\ b s=\"x\u003cy\",v=1u 1': invalid number`)
	}
	b.WriteString(` dropped=2"}` + "\n")
	body := []byte(b.String())
	require.Greater(t, len(body), 4*maxMessage)
	err := classify(400, body, nil, bad+10)
	requireClass(t, err, want{outcome: morse.OutcomePartial, reason: morse.ReasonUnableToParse, dropped: bad + 2})
	var serr *ServerError
	require.ErrorAs(t, err, &serr)
	require.Len(t, serr.Message, maxMessage, "only the head of the message is kept")
	require.True(t, strings.HasPrefix(serr.Message, `partial write: unable to parse 'm,host=a\ b s="x<y",v=1u 1': invalid number`+"\n"))
}
