package influxdbv2

// A fake sink, only for the answers of InfluxDB 2 and 3 that no local server can give. The
// bodies are answers_test.go's, quoted from the servers' sources; the real-server tests are
// vm_test.go (VictoriaMetrics) and listener_test.go (morse's influxdb_listener).

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// bodyLines reads a request's lines, gzip or not.
func bodyLines(t testing.TB, r *http.Request) []string {
	body, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		body, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	return splitLines(body)
}

// answerWith writes status and an InfluxDB JSON body.
func answerWith(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// store keeps the distinct lines a fake server stored.
type store struct {
	mu    sync.Mutex
	lines map[string]int // line → times written
}

func (s *store) add(lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lines == nil {
		s.lines = map[string]int{}
	}
	for _, l := range lines {
		s.lines[l]++
	}
}

func (s *store) distinct() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for l := range s.lines {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// numbered is a batch of n metrics whose lines are all distinct.
func numbered(t testing.TB, n int) []morse.Metric {
	batch := make([]morse.Metric, n)
	for i := range batch {
		batch[i] = metric(t, "m", map[string]string{"i": strconv.Itoa(i)}, map[string]any{"v": float64(i)}, time.Unix(0, int64(i)))
	}
	return batch
}

// linesOf serializes a batch as the output would (no uints), sorted.
func linesOf(t testing.TB, batch []morse.Metric) []string {
	o := New()
	o.Bucket = "b"
	require.NoError(t, o.setup())
	var out []string
	for _, m := range batch {
		b, err := o.ser.AppendMetric(nil, m)
		require.NoError(t, err)
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
	slices.Sort(out)
	return out
}

// TestSplitOn413 writes to a server that refuses bodies over maxLines lines with InfluxDB
// 2's 413: the halves are written until each fits, and every line is stored exactly once.
func TestSplitOn413(t *testing.T) {
	for _, tc := range []struct {
		name               string
		n, maxLines        int
		requests, refusals int
	}{
		{"fits", 100, 100, 1, 0},
		{"one split", 100, 50, 3, 1},
		{"three levels", 100, 30, 7, 3},
		{"uneven", 7, 2, 7, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st store
			rec, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				lines := bodyLines(t, r)
				if len(lines) > tc.maxLines {
					answerWith(w, http.StatusRequestEntityTooLarge, v2TooLarge)
					return
				}
				st.add(lines...)
				w.WriteHeader(http.StatusNoContent)
			}))
			o := connected(t, url)
			batch := numbered(t, tc.n)
			require.NoError(t, o.Write(testutil.Context(t), batch))
			require.Equal(t, linesOf(t, batch), st.distinct())
			for l, n := range st.lines {
				require.Equal(t, 1, n, "line %q written once", l)
			}
			reqs := rec.requests()
			require.Len(t, reqs, tc.requests)
			refused := 0
			for _, r := range reqs {
				if r.status == http.StatusRequestEntityTooLarge {
					refused++
				}
			}
			require.Equal(t, tc.refusals, refused)
		})
	}
}

// TestSplitOn413OneLine: a line that is too large on its own is dropped for good, exactly.
func TestSplitOn413OneLine(t *testing.T) {
	var st store
	_, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lines := bodyLines(t, r)
		for _, l := range lines {
			if strings.Contains(l, "huge") {
				answerWith(w, http.StatusRequestEntityTooLarge, v2TooLarge)
				return
			}
		}
		st.add(lines...)
		w.WriteHeader(http.StatusNoContent)
	}))
	o := connected(t, url)
	batch := numbered(t, 9)
	batch[4] = metric(t, "huge", nil, map[string]any{"v": 1.0}, time.Unix(0, 4))
	err := o.Write(testutil.Context(t), batch)
	var pw *morse.PartialWriteError
	require.True(t, errors.As(err, &pw), "%v", err)
	require.Equal(t, 1, pw.Dropped)
	require.Equal(t, 8, pw.Written)
	require.Equal(t, ReasonTooLarge, pw.Reason)
	require.Equal(t, linesOf(t, slices.Delete(slices.Clone(batch), 4, 5)), st.distinct())
}

// TestRoutingWithFailingBuckets routes to four buckets: one unknown (404), one with a type
// conflict (422, dropped=1) and two that store everything. The failures are counted exactly
// and do not hold the others back.
func TestRoutingWithFailingBuckets(t *testing.T) {
	var st store
	_, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lines := bodyLines(t, r)
		switch r.URL.Query().Get("bucket") {
		case "nope":
			answerWith(w, http.StatusNotFound, v2BucketNotFound)
		case "conflict":
			st.add(lines[1:]...) // the first line is the conflicting one
			answerWith(w, http.StatusUnprocessableEntity, v2TypeConflict)
		default:
			st.add(lines...)
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	o := connected(t, url, func(o *InfluxDBv2) { o.Bucket = "main"; o.BucketTag = "to"; o.ExcludeBucketTag = true })
	buckets := []string{"", "nope", "conflict", "other", "nope"}
	var batch []morse.Metric
	count := map[string]int{}
	for i := range 50 {
		b := buckets[i%len(buckets)]
		tags := map[string]string{"i": strconv.Itoa(i)}
		if b != "" {
			tags["to"] = b
		}
		count[b]++
		batch = append(batch, metric(t, "m", tags, map[string]any{"v": float64(i)}, time.Unix(0, int64(i))))
	}
	err := o.Write(testutil.Context(t), batch)
	var pw *morse.PartialWriteError
	require.True(t, errors.As(err, &pw), "%v", err)
	dropped := count["nope"] + 1
	written, got := pw.Split(len(batch))
	require.Equal(t, dropped, got)
	require.Equal(t, len(batch)-dropped, written)
	require.Equal(t, len(batch)-dropped, pw.Written)
	require.Equal(t, ReasonBucketNotFound, pw.Reason, "the first reason seen")
	require.Equal(t, count["nope"], pw.Dropped, "each reason counted on its own")
	require.Len(t, pw.More, 1)
	require.Equal(t, 1, pw.More[0].Dropped)
	require.Len(t, st.distinct(), len(batch)-dropped)
	require.ErrorContains(t, err, `bucket "nope" not found`)
	require.ErrorContains(t, err, "field type conflict")
}

// TestRoutingRetriesTheBatch: a bucket that must be retried makes the whole batch retried.
func TestRoutingRetriesTheBatch(t *testing.T) {
	_, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = bodyLines(t, r)
		if r.URL.Query().Get("bucket") == "busy" {
			w.Header().Set("Retry-After", "7")
			answerWith(w, http.StatusTooManyRequests, `{"code":"too many requests","message":"over quota"}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	o := connected(t, url, func(o *InfluxDBv2) { o.BucketTag = "to" })
	batch := []morse.Metric{
		metric(t, "m", nil, map[string]any{"v": 1.0}, time.Unix(0, 1)),
		metric(t, "m", map[string]string{"to": "busy"}, map[string]any{"v": 2.0}, time.Unix(0, 2)),
	}
	err := o.Write(testutil.Context(t), batch)
	require.Equal(t, verdict{outcome: morse.OutcomeRetry, retryAfter: 7 * time.Second}, verdictOf(err))
}

// v3Sink behaves as InfluxDB 3.5+ does on /api/v2/write: it stores every good line of a
// request, and when any line is bad (here: has a field "bad") it answers 500 "partial write
// of line protocol occurred" without saying which or how many.
func v3Sink(t *testing.T, st *store) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rejected := false
		for _, l := range bodyLines(t, r) {
			if strings.Contains(l, "bad=") {
				rejected = true
				continue
			}
			st.add(l)
		}
		if rejected {
			answerWith(w, http.StatusInternalServerError, v3PartialUncounted)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// TestV3UncountedPartialWrite finds the lines InfluxDB 3.5+ rejected without counting them,
// by writing halves, within 2·log2(n) extra requests per bad line; past the search's budget
// the unresolved pieces are counted dropped whole (an upper bound), and it says so.
func TestV3UncountedPartialWrite(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		bad   int
		exact bool
	}{{0, true}, {1, true}, {3, true}, {8, true}, {100, false}} {
		t.Run(strconv.Itoa(tc.bad)+" bad", func(t *testing.T) {
			var st store
			rec, url := record(t, v3Sink(t, &st))
			o := connected(t, url)
			batch := numbered(t, n)
			rng := rand.New(rand.NewPCG(uint64(tc.bad), 15))
			var good []morse.Metric
			badAt := rng.Perm(n)[:tc.bad]
			for i := range batch {
				if slices.Contains(badAt, i) {
					batch[i] = metric(t, "m", map[string]string{"i": strconv.Itoa(i)}, map[string]any{"bad": true}, time.Unix(0, int64(i)))
				} else {
					good = append(good, batch[i])
				}
			}
			err := o.Write(testutil.Context(t), batch)
			require.Equal(t, linesOf(t, good), st.distinct(), "every good line stored")
			extra := len(rec.requests()) - 1
			require.LessOrEqual(t, extra, 16*bits.Len(uint(n)), "the search's budget")
			if tc.bad == 0 {
				require.NoError(t, err)
				require.Zero(t, extra)
				return
			}
			var pw *morse.PartialWriteError
			require.True(t, errors.As(err, &pw), "%v", err)
			if tc.exact {
				require.Equal(t, tc.bad, pw.Dropped)
				require.Equal(t, n-tc.bad, pw.Written)
				require.LessOrEqual(t, extra, 2*tc.bad*bits.Len(uint(n)), "about 2·log2(n) requests per bad line")
				return
			}
			require.GreaterOrEqual(t, pw.Dropped, tc.bad, "an upper bound")
			require.ErrorContains(t, err, "used up its requests")
		})
	}
}

// TestV3ListedPartialWrite: InfluxDB 3.0 to 3.4 list the lines they rejected, each with
// its 1-based line number and its own message; one request, and each line counted under its
// own reason at its own position.
func TestV3ListedPartialWrite(t *testing.T) {
	rec, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = bodyLines(t, r)
		answerWith(w, http.StatusBadRequest, v3PartialListed)
	}))
	o := connected(t, url)
	err := o.Write(testutil.Context(t), numbered(t, 10))
	require.Equal(t, verdict{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1}, verdictOf(err))
	require.Len(t, rec.requests(), 1)
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, []int{1}, pw.Indices, "line_number 2")
	require.Len(t, pw.More, 1)
	require.Equal(t, morse.ReasonUnableToParse, pw.More[0].Reason, "No fields were provided")
	require.Equal(t, []int{4}, pw.More[0].Indices, "line_number 5")
	written, dropped := pw.Split(10)
	require.Equal(t, 8, written)
	require.Equal(t, 2, dropped)
}

// TestAnswersEndToEnd sends a batch to a sink that gives one InfluxDB answer, and checks what
// Write makes of it: the classification seen through the whole output, once per answer.
func TestAnswersEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		after  string
		body   string
		want   verdict
	}{
		{"429", 429, "7", `{"code":"too many requests","message":"over quota"}`, verdict{outcome: morse.OutcomeRetry, retryAfter: 7 * time.Second}},
		{"503", 503, "2", `{"code":"unavailable","message":"try later"}`, verdict{outcome: morse.OutcomeRetry, retryAfter: 2 * time.Second}},
		{"401", 401, "", v2Unauthorized, verdict{outcome: morse.OutcomeRetry}},
		{"422 type conflict", 422, "", v2TypeConflict, verdict{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1}},
		{"422 retention", 422, "", v2Retention, verdict{outcome: morse.OutcomePartial, reason: morse.ReasonBeyondRetention, dropped: 2}},
		{"404 bucket", 404, "", v2BucketNotFound, verdict{outcome: morse.OutcomeDropped, reason: ReasonBucketNotFound}},
		{"400 parse", 400, "", v2ParseError, rejV(morse.ReasonUnableToParse)},
		{"500 partial write (2.0.3)", 500, "", v203TypeConflict, partV(morse.ReasonFieldTypeConflict, 1)},
		{"400 type conflict (1.8)", 400, "", v18TypeConflict, verdict{outcome: morse.OutcomePartial, reason: morse.ReasonFieldTypeConflict, dropped: 1}},
		{"500 engine", 500, "", v2Engine, verdict{outcome: morse.OutcomeRetry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = bodyLines(t, r)
				if tc.after != "" {
					w.Header().Set("Retry-After", tc.after)
				}
				answerWith(w, tc.status, tc.body)
			}))
			o := connected(t, url)
			err := o.Write(testutil.Context(t), numbered(t, 10))
			require.Equal(t, tc.want, verdictOf(err), "%v", err)
			require.Len(t, rec.requests(), 1, "no split, no second URL")
		})
	}
}

// TestFailover: a URL that refuses connections is skipped, and the next write starts at the
// URL that answered.
func TestFailover(t *testing.T) {
	dead := "http://" + testutil.FreeAddr(t) // nothing listens there
	rec, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = bodyLines(t, r)
		w.WriteHeader(http.StatusNoContent)
	}))
	o := connected(t, dead, func(o *InfluxDBv2) { o.URLs = []string{dead, url} })
	for range 3 {
		require.NoError(t, o.Write(testutil.Context(t), numbered(t, 2)))
	}
	require.Len(t, rec.requests(), 3)
	require.Equal(t, 1, o.failover.Current())

	o2 := connected(t, dead)
	err := o2.Write(testutil.Context(t), numbered(t, 2))
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.ErrorContains(t, err, "no URL answered")
}

// TestTimeout: a server that does not answer within timeout makes the write retryable.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	_, url := record(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = bodyLines(t, r)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) })
	o := connected(t, url, func(o *InfluxDBv2) { o.Timeout = morse.Duration(100 * time.Millisecond) })
	start := time.Now()
	err := o.Write(testutil.Context(t), numbered(t, 2))
	require.Equal(t, morse.OutcomeRetry, morse.Classify(err))
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
