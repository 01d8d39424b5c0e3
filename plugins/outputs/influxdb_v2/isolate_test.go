package influxdbv2

// Requests refused whole because of some of their lines, seen through the batch writer as the
// agent runs the output: the writer must find the bad lines and write the rest.

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testutil"
)

// drained writes batch through a batch writer in front of o, in one batch, and closes the
// writer, which writes what it holds before it returns. It returns the writer's counts and
// the metrics it dropped, by reason.
func drained(t *testing.T, o *InfluxDBv2, metrics []morse.Metric) (batch.Stats, map[string][]morse.Metric) {
	t.Helper()
	var mu sync.Mutex
	dropped := map[string][]morse.Metric{}
	var unknown []error // drops the sink did not name one by one
	w, err := batch.NewWriter(o, batch.Options{
		BatchSize: len(metrics), BufferLimit: len(metrics), FlushInterval: time.Hour,
		Logger: testutil.QuietLogger(), Name: "influxdb_v2", Initialized: true,
		OnDrop: func(e batch.DropEvent) {
			mu.Lock()
			defer mu.Unlock()
			if e.Partial {
				unknown = append(unknown, e.Err)
			}
			dropped[e.Reason] = append(dropped[e.Reason], e.Metrics...)
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.WriteBatch(metrics))
	require.NoError(t, w.Close(testutil.Context(t)))
	require.Empty(t, unknown, "every drop is known metric by metric")
	return w.Stats(), dropped
}

// v2ParseSink behaves as InfluxDB 2 does (http/points/points_parser.go): it parses every
// line of a request before it writes any, and refuses the request whole with 400 "invalid"
// when some do not parse (here: lines with a field "bad"), naming each by its text, not its
// number. Bucket "nope" does not exist (404, before the body is read); a request of more
// than maxLines lines gets 413 (0: no limit).
func v2ParseSink(t *testing.T, st *store, maxLines int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lines := bodyLines(t, r)
		if r.URL.Query().Get("bucket") == "nope" {
			answerWith(w, http.StatusNotFound, v2BucketNotFound)
			return
		}
		if maxLines > 0 && len(lines) > maxLines {
			answerWith(w, http.StatusRequestEntityTooLarge, v2TooLarge)
			return
		}
		var failed []string
		for _, l := range lines {
			if strings.Contains(l, "bad=") {
				failed = append(failed, "unable to parse '"+l+"': invalid field format")
			}
		}
		if len(failed) > 0 {
			body, err := json.Marshal(map[string]string{"code": "invalid", "message": strings.Join(failed, "\n")})
			require.NoError(t, err)
			answerWith(w, http.StatusBadRequest, string(body))
			return
		}
		st.add(lines...)
		w.WriteHeader(http.StatusNoContent)
	}
}

// TestParseErrorIsolated: a line InfluxDB 2 cannot parse makes it refuse the whole request,
// storing nothing. The output says so with a morse.RejectedError, so the batch writer finds
// the bad lines and writes every other one: unrouted, routed by bucket_tag (where another
// bucket's 404 is dropped whole, never searched), and after 413 splits.
func TestParseErrorIsolated(t *testing.T) {
	const n = 60
	for _, tc := range []struct {
		name     string
		routed   bool
		maxLines int
		bad      []int
	}{
		{"one bad line", false, 0, []int{17}},
		{"three bad lines", false, 0, []int{0, 31, 59}},
		{"routed", true, 0, []int{4, 22}},
		{"after 413 halves", false, 20, []int{9, 40}},
		{"routed, after 413 halves", true, 8, []int{4, 33}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st store
			_, url := record(t, v2ParseSink(t, &st, tc.maxLines))
			o := connected(t, url, func(o *InfluxDBv2) {
				if tc.routed {
					o.BucketTag = "to"
				}
			})
			var metrics, good, missing []morse.Metric
			for i := range n {
				tags := map[string]string{"i": strconv.Itoa(i)}
				if tc.routed {
					tags["to"] = []string{"b", "other", "nope"}[i%3]
				}
				fields := map[string]any{"v": float64(i)}
				if slices.Contains(tc.bad, i) {
					fields = map[string]any{"bad": true}
				}
				m := metric(t, "m", tags, fields, time.Unix(0, int64(i)))
				metrics = append(metrics, m)
				switch {
				case tags["to"] == "nope":
					missing = append(missing, m)
				case !slices.Contains(tc.bad, i):
					good = append(good, m)
				}
			}
			if tc.routed {
				for _, i := range tc.bad {
					require.NotEqual(t, 2, i%3, "a bad line of bucket nope would be dropped as not found")
				}
			}
			stats, dropped := drained(t, o, metrics)
			require.Equal(t, linesOf(t, good), st.distinct(), "every good line stored")
			require.EqualValues(t, len(good), stats.Written)
			var bad []morse.Metric
			for _, i := range tc.bad {
				bad = append(bad, metrics[i])
			}
			require.ElementsMatch(t, bad, dropped[morse.ReasonUnableToParse], "exactly the bad lines")
			require.ElementsMatch(t, missing, dropped[ReasonBucketNotFound])
			require.EqualValues(t, len(bad)+len(missing), stats.Dropped)
		})
	}
}

// TestParseErrorWriteResult checks what Write itself returns to the batch writer: a
// RejectedError for the batch when any bucket's request was refused for some of its lines,
// with every line named or not, and no search for an answer no line causes.
func TestParseErrorWriteResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routed bool
		bad    []int
		want   verdict
	}{
		{"some lines bad", false, []int{1}, rejV(morse.ReasonUnableToParse)},
		{"every line bad: nothing to search", false, []int{0, 1, 2, 3, 4, 5}, permV(morse.ReasonUnableToParse)},
		{"routed: one bucket refused", true, []int{1}, rejV(morse.ReasonUnableToParse)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st store
			rec, url := record(t, v2ParseSink(t, &st, 0))
			o := connected(t, url, func(o *InfluxDBv2) {
				if tc.routed {
					o.BucketTag = "to"
				}
			})
			var metrics []morse.Metric
			for i := range 6 {
				tags := map[string]string{"to": []string{"b", "other"}[i%2]}
				fields := map[string]any{"v": float64(i)}
				if slices.Contains(tc.bad, i) {
					fields = map[string]any{"bad": true}
				}
				metrics = append(metrics, metric(t, "m", tags, fields, time.Unix(0, int64(i))))
			}
			err := o.Write(testutil.Context(t), metrics)
			require.Equal(t, tc.want, verdictOf(err), "%v", err)
			var rej *morse.RejectedError
			if errors.As(err, &rej) {
				require.Equal(t, -1, rej.Index, "InfluxDB 2 quotes the bad line, not its number")
			}
			require.NotEmpty(t, rec.requests())
		})
	}
}
