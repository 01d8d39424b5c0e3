package http_test

import (
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	httpout "github.com/morse-agent/morse/plugins/outputs/http"
)

// promValues queries the latest value of every series whose name matches re, as
// "name{host} value" lines, sorted.
func promValues(t *testing.T, p *testserver.PromServer, re string) []string {
	t.Helper()
	var out []string
	for _, s := range p.Query(t, `{__name__=~"`+re+`"}`) {
		out = append(out, fmt.Sprintf("%s{%s} %s", s.Metric["__name__"], s.Metric["host"], strconv.FormatFloat(s.Value, 'g', -1, 64)))
	}
	sort.Strings(out)
	return out
}

// TestRemoteWritePrometheus writes through the batch writer to a real Prometheus 2.42's
// remote-write receiver (--web.enable-remote-write-receiver) and reads back through its query
// API what it stored. Then it sends batches in which some metrics carry a sample Prometheus
// refuses (older than its series' latest, a second value at the same time, more than an hour
// before the newest data): Prometheus refuses the whole request with 400 naming one sample,
// the output reports it as rejected, and the batch writer's halving finds exactly those
// metrics, counted under their reason, while every other metric of the batch is stored.
func TestRemoteWritePrometheus(t *testing.T) {
	p := testserver.SharedPrometheus(t)
	o := connected(t, p.URL()+"/api/v1/write", remoteWrite)
	now := time.Now().Truncate(time.Millisecond)

	var first []morse.Metric
	var want []string
	for i := range 5 {
		host := "h" + strconv.Itoa(i)
		first = append(first, metric(t, "rw", map[string]string{"host": host},
			map[string]any{"f": float64(i) + 0.5, "i": int64(-i), "u": uint64(i), "b": i%2 == 0, "s": "not a sample"}, now.Add(-10*time.Second)))
		want = append(want, fmt.Sprintf("rw_b{%s} %d", host, 1-i%2), fmt.Sprintf("rw_f{%s} %s", host, strconv.FormatFloat(float64(i)+0.5, 'g', -1, 64)),
			fmt.Sprintf("rw_i{%s} %d", host, -i), fmt.Sprintf("rw_u{%s} %d", host, i))
	}
	stats, dropped := drained(t, o, first)
	require.Empty(t, dropped)
	require.EqualValues(t, len(first), stats.Written)
	sort.Strings(want)
	require.Equal(t, want, promValues(t, p, "rw_.*"))

	for _, tc := range []struct {
		name   string
		bad    func(i int) morse.Metric
		reason string
	}{
		{"out of order", func(i int) morse.Metric {
			return metric(t, "rw", map[string]string{"host": "h" + strconv.Itoa(i)}, map[string]any{"f": 99.0}, now.Add(-20*time.Second))
		}, httpout.ReasonOutOfOrder},
		{"duplicate", func(i int) morse.Metric {
			return metric(t, "rw", map[string]string{"host": "h" + strconv.Itoa(i)}, map[string]any{"f": 99.0}, now.Add(-10*time.Second))
		}, httpout.ReasonDuplicate},
		{"out of bounds", func(i int) morse.Metric {
			return metric(t, "rw_old", map[string]string{"host": "h" + strconv.Itoa(i)}, map[string]any{"f": 1.0}, now.Add(-3*time.Hour))
		}, httpout.ReasonOutOfBounds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := "rw_ok_" + strconv.Itoa(len(tc.name))
			var batch, bad []morse.Metric
			var wantGood []string
			for i := range 16 {
				host := "g" + strconv.Itoa(i)
				batch = append(batch, metric(t, good, map[string]string{"host": host}, map[string]any{"v": float64(i)}, now))
				wantGood = append(wantGood, fmt.Sprintf("%s_v{%s} %d", good, host, i))
				if i == 3 || i == 11 {
					m := tc.bad(i % 5)
					batch, bad = append(batch, m), append(bad, m)
				}
			}
			stats, dropped := drained(t, o, batch)
			require.Equal(t, map[string][]morse.Metric{tc.reason: bad}, dropped)
			require.EqualValues(t, len(batch)-len(bad), stats.Written)
			sort.Strings(wantGood)
			require.Equal(t, wantGood, promValues(t, p, good+"_.*"))
			require.Equal(t, want, promValues(t, p, "rw_[bfiu]"), "the first values stand")
		})
	}
}
