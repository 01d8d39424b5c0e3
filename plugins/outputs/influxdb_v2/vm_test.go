package influxdbv2

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestVictoriaMetrics writes to a real VictoriaMetrics 1.79.5 through /api/v2/write, with
// gzip and without, and reads back through /api/v1/export exactly what it stored. A
// recording proxy in front shows what went over the wire. VictoriaMetrics drops samples
// older than its retention and turns strings into 0, so the points are current and numeric.
func TestVictoriaMetrics(t *testing.T) {
	vm := testserver.StartVictoriaMetrics(t, testserver.VictoriaMetricsOptions{})
	for _, tc := range []struct {
		name, encoding, wire string
		uints                bool
	}{
		{"default is gzip", "", "gzip", false},
		{"gzip", "gzip", "gzip", true},
		{"identity", "identity", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // VictoriaMetrics shows new series after about a second: wait once
			rec, url := record(t, proxyTo(t, vm.URL()))
			o := connected(t, url, func(o *InfluxDBv2) {
				o.ContentEncoding = tc.encoding
				o.UintSupport = tc.uints
				o.Organization = "org"
				o.Token = "secret-token"
			})
			name := "vm_" + strconv.Itoa(len(tc.name)) + tc.wire
			now := time.Now().Truncate(time.Millisecond)
			var batch []morse.Metric
			var want []string
			for i := range 300 {
				ts := now.Add(time.Duration(i) * time.Millisecond)
				host := "h" + strconv.Itoa(i%7)
				batch = append(batch, metric(t, name, map[string]string{"host": host},
					map[string]any{"f": float64(i) + 0.25, "i": int64(-i), "u": uint64(i), "b": i%2 == 0}, ts))
				ms := ts.UnixMilli()
				want = append(want,
					fmt.Sprintf("%s_f{host=%s} %s@%d", name, host, strconv.FormatFloat(float64(i)+0.25, 'g', -1, 64), ms),
					fmt.Sprintf("%s_i{host=%s} %d@%d", name, host, -i, ms),
					fmt.Sprintf("%s_u{host=%s} %d@%d", name, host, i, ms),
					fmt.Sprintf("%s_b{host=%s} %d@%d", name, host, 1-i%2, ms))
			}
			require.NoError(t, o.Write(testutil.Context(t), batch))

			got := vm.ExportSamples(t, `{__name__=~"`+name+`_.*"}`, len(want), 20*time.Second)
			require.ElementsMatch(t, want, testserver.VMSamples(got))
			reqs := rec.requests()
			require.Len(t, reqs, 1)
			require.Equal(t, tc.wire, reqs[0].encoding)
			require.Equal(t, "b", reqs[0].bucket)
			require.Equal(t, "org", reqs[0].org)
			require.Equal(t, "Token secret-token", reqs[0].auth)
			require.Equal(t, http.StatusNoContent, reqs[0].status)
			require.Len(t, reqs[0].lines, len(batch))
			if tc.uints {
				require.Contains(t, reqs[0].lines[1], "u=1u")
			} else {
				require.Contains(t, reqs[0].lines[1], "u=1i")
			}
		})
	}
}

// TestVictoriaMetricsBucketRouting routes by bucket_tag: one request per bucket, each with
// exactly its bucket's lines, and VictoriaMetrics stores them all. VictoriaMetrics ignores the
// bucket itself, so the recording proxy shows where each line went; exclude_bucket_tag
// decides whether the tag is stored as a label.
func TestVictoriaMetricsBucketRouting(t *testing.T) {
	vm := testserver.StartVictoriaMetrics(t, testserver.VictoriaMetricsOptions{})
	for _, exclude := range []bool{false, true} {
		t.Run("exclude_bucket_tag="+strconv.FormatBool(exclude), func(t *testing.T) {
			t.Parallel()
			rec, url := record(t, proxyTo(t, vm.URL()))
			o := connected(t, url, func(o *InfluxDBv2) {
				o.Bucket = "fallback"
				o.BucketTag = "dest"
				o.ExcludeBucketTag = exclude
			})
			require.False(t, o.WritesLines(), "routing reads a tag of every metric")
			name := "route_" + strconv.FormatBool(exclude)
			now := time.Now().Truncate(time.Millisecond)
			dests := []string{"alpha", "beta", "", "alpha", "gamma", "beta", ""}
			var batch []morse.Metric
			var want []string
			wantLines := map[string]int{}
			for i := range 70 {
				d := dests[i%len(dests)]
				tags := map[string]string{"n": strconv.Itoa(i)}
				label := "n=" + strconv.Itoa(i)
				bucket := "fallback"
				if d != "" {
					tags["dest"], bucket = d, d
					if !exclude {
						label = "dest=" + d + "," + label
					}
				}
				wantLines[bucket]++
				batch = append(batch, metric(t, name, tags, map[string]any{"v": float64(i)}, now))
				want = append(want, fmt.Sprintf("%s_v{%s} %d@%d", name, label, i, now.UnixMilli()))
			}
			require.NoError(t, o.Write(testutil.Context(t), batch))

			got := vm.ExportSamples(t, `{__name__="`+name+`_v"}`, len(want), 20*time.Second)
			require.ElementsMatch(t, want, testserver.VMSamples(got))
			gotLines := map[string]int{}
			for _, r := range rec.requests() {
				require.Zero(t, gotLines[r.bucket], "one request per bucket")
				require.Equal(t, http.StatusNoContent, r.status)
				gotLines[r.bucket] = len(r.lines)
			}
			require.Equal(t, wantLines, gotLines)
		})
	}
}
