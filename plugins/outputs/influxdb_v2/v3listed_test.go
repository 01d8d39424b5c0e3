package influxdbv2

// InfluxDB 3.0 to 3.4's partial writes, which list every rejected line, seen through the
// batch writer: each line must be dropped at its position, under its own reason.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// v3ListedSink behaves as InfluxDB 3.0 to 3.4 do: it stores the good lines of a request and
// lists each rejected one with its 1-based line number (influxdb3_write's validator,
// line_idx + 1) and its own message: a field "bad" conflicts with the column's type, a
// field "wide" exceeds the table's column limit. A request of more than maxLines lines gets
// 413 (0: no limit).
func v3ListedSink(t *testing.T, st *store, maxLines int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lines := bodyLines(t, r)
		if maxLines > 0 && len(lines) > maxLines {
			answerWith(w, http.StatusRequestEntityTooLarge, v2TooLarge)
			return
		}
		type entry struct {
			Msg  string `json:"error_message"`
			Line int    `json:"line_number"`
			Orig string `json:"original_line"`
		}
		var data []entry
		for i, l := range lines {
			switch {
			case strings.Contains(l, "bad="):
				data = append(data, entry{"invalid column type for column 'bad', expected iox::column_type::field::float, got iox::column_type::field::boolean", i + 1, l[:min(20, len(l))]})
			case strings.Contains(l, "wide="):
				data = append(data, entry{"Update to schema would exceed number of columns per table limit of 500 columns", i + 1, l[:min(20, len(l))]})
			default:
				st.add(l)
			}
		}
		if len(data) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		body, err := json.Marshal(map[string]any{"error": "partial write of line protocol occurred", "data": data})
		require.NoError(t, err)
		answerWith(w, http.StatusBadRequest, string(body))
	}
}

// TestV3ListedLinesAtTheirPositions writes through the batch writer to InfluxDB 3.0-3.4's
// listed partial writes: each rejected metric is dropped under its own reason, exactly,
// whatever sits before it in the request: metrics the serializer left out, other buckets,
// 413 halves.
func TestV3ListedLinesAtTheirPositions(t *testing.T) {
	const n = 40
	kinds := map[int]string{3: "bad", 7: "unwritable", 12: "wide", 13: "bad", 30: "unwritable", 38: "wide"}
	reasons := map[string]string{"bad": morse.ReasonFieldTypeConflict, "wide": ReasonSchemaLimit, "unwritable": morse.ReasonSerialize}
	for _, tc := range []struct {
		name     string
		routed   bool
		maxLines int
	}{
		{"one request", false, 0},
		{"routed", true, 0},
		{"routed, after 413 halves", true, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st store
			_, url := record(t, v3ListedSink(t, &st, tc.maxLines))
			o := connected(t, url, func(o *InfluxDBv2) {
				if tc.routed {
					o.BucketTag = "to"
				}
			})
			var metrics, good []morse.Metric
			want := map[string][]morse.Metric{}
			for i := range n {
				tags := map[string]string{"i": strconv.Itoa(i), "to": []string{"x", "y"}[i%2]}
				fields, ts := map[string]any{"v": float64(i)}, time.Unix(0, int64(i))
				switch kinds[i] {
				case "bad", "wide":
					fields = map[string]any{kinds[i]: true}
				case "unwritable":
					ts = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) // before line protocol's range
				}
				m := metric(t, "m", tags, fields, ts)
				metrics = append(metrics, m)
				if kinds[i] == "" {
					good = append(good, m)
				} else {
					want[reasons[kinds[i]]] = append(want[reasons[kinds[i]]], m)
				}
			}
			stats, dropped := drained(t, o, metrics)
			require.Equal(t, linesOf(t, good), st.distinct())
			require.EqualValues(t, len(good), stats.Written)
			require.Len(t, dropped, len(want))
			for reason, ms := range want {
				require.ElementsMatch(t, ms, dropped[reason], reason)
			}
		})
	}
}
