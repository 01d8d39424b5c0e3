package http_test

import (
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	httpout "github.com/morse-agent/morse/plugins/outputs/http"
)

// TestVictoriaMetrics writes to a real VictoriaMetrics 1.79.5 in three formats, each to the
// endpoint that reads it, and reads back through /api/v1/export exactly what it stored:
// prometheusremotewrite to /api/v1/write (a histogram and a summary by Telegraf's
// conventions among plain samples), influx to /write, gzipped, and json, one metric per
// request (use_batch_format = false), shaped by json_transformation into VictoriaMetrics'
// own import format for /api/v1/import. A recording proxy in front shows the headers.
func TestVictoriaMetrics(t *testing.T) {
	vm := testserver.StartVictoriaMetrics(t, testserver.VictoriaMetricsOptions{})
	now := time.Now().Truncate(time.Millisecond)
	ms := now.UnixMilli()

	t.Run("prometheusremotewrite", func(t *testing.T) {
		rec := testserver.StartRecorder(t, vm.URL())
		o := connected(t, rec.URL()+"/api/v1/write", remoteWrite, func(o *httpout.HTTP) {
			o.Headers = map[string]morse.Secret{"X-Scope-OrgID": "tenant"}
		})
		batch := []morse.Metric{
			metric(t, "vmrw", map[string]string{"host": "a"}, map[string]any{"f": 1.5, "n": int64(7)}, now),
			metric(t, "prometheus", nil, map[string]any{"vmrw_lat_sum": 12.5, "vmrw_lat_count": int64(9)}, now),
			metric(t, "prometheus", map[string]string{"le": "0.5"}, map[string]any{"vmrw_lat_bucket": int64(4)}, now),
			metric(t, "prometheus", map[string]string{"le": "+Inf"}, map[string]any{"vmrw_lat_bucket": int64(9)}, now),
			metric(t, "prometheus", map[string]string{"quantile": "0.99"}, map[string]any{"vmrw_rpc": 0.25}, now),
		}
		stats, dropped := drained(t, o, batch)
		require.Empty(t, dropped)
		require.EqualValues(t, len(batch), stats.Written)
		want := []string{
			fmt.Sprintf("vmrw_f{host=a} 1.5@%d", ms), fmt.Sprintf("vmrw_n{host=a} 7@%d", ms),
			fmt.Sprintf("vmrw_lat_sum{} 12.5@%d", ms), fmt.Sprintf("vmrw_lat_count{} 9@%d", ms),
			fmt.Sprintf("vmrw_lat_bucket{le=0.5} 4@%d", ms), fmt.Sprintf("vmrw_lat_bucket{le=+Inf} 9@%d", ms),
			fmt.Sprintf("vmrw_rpc{quantile=0.99} 0.25@%d", ms),
		}
		got := vm.ExportSamples(t, `{__name__=~"vmrw_.*"}`, len(want), 20*time.Second)
		require.ElementsMatch(t, want, testserver.VMSamples(got))

		reqs := rec.Requests()
		require.Len(t, reqs, 1)
		h := reqs[0].Header
		require.Equal(t, "application/x-protobuf", h.Get("Content-Type"))
		require.Equal(t, "snappy", h.Get("Content-Encoding"))
		require.Equal(t, "0.1.0", h.Get("X-Prometheus-Remote-Write-Version"))
		require.Equal(t, "tenant", h.Get("X-Scope-OrgID"))
		body, err := io.ReadAll(reqs[0].Body)
		require.NoError(t, err)
		_, err = snappy.Decode(nil, body)
		require.NoError(t, err, "snappy's block format")
	})

	t.Run("influx", func(t *testing.T) {
		o := connected(t, vm.URL()+"/write", func(o *httpout.HTTP) { o.ContentEncoding = "gzip" })
		var batch []morse.Metric
		var want []string
		for i := range 50 {
			ts := now.Add(time.Duration(i) * time.Millisecond)
			batch = append(batch, metric(t, "vmlp", map[string]string{"host": "h" + strconv.Itoa(i%3)}, map[string]any{"v": float64(i)}, ts))
			want = append(want, fmt.Sprintf("vmlp_v{host=h%d} %d@%d", i%3, i, ts.UnixMilli()))
		}
		stats, dropped := drained(t, o, batch)
		require.Empty(t, dropped)
		require.EqualValues(t, len(batch), stats.Written)
		got := vm.ExportSamples(t, `{__name__="vmlp_v"}`, len(want), 20*time.Second)
		require.ElementsMatch(t, want, testserver.VMSamples(got))
	})

	t.Run("json", func(t *testing.T) {
		o := connected(t, vm.URL()+"/api/v1/import", func(o *httpout.HTTP) {
			o.DataFormat = "json"
			o.UseBatchFormat = false
			o.JSON.TimestampUnits = morse.Duration(time.Millisecond)
			o.JSON.Transformation = `{"metric": $merge([{"__name__": name & "_v"}, tags]), "values": [fields.v], "timestamps": [timestamp]}`
			o.Headers = map[string]morse.Secret{"Content-Type": "application/json"}
		})
		var batch []morse.Metric
		var want []string
		for i := range 5 {
			ts := now.Add(time.Duration(i) * time.Millisecond)
			batch = append(batch, metric(t, "vmjson", map[string]string{"host": "h" + strconv.Itoa(i)}, map[string]any{"v": float64(i) + 0.5}, ts))
			want = append(want, fmt.Sprintf("vmjson_v{host=h%d} %s@%d", i, strconv.FormatFloat(float64(i)+0.5, 'g', -1, 64), ts.UnixMilli()))
		}
		stats, dropped := drained(t, o, batch)
		require.Empty(t, dropped)
		require.EqualValues(t, len(batch), stats.Written)
		got := vm.ExportSamples(t, `{__name__="vmjson_v"}`, len(want), 20*time.Second)
		require.ElementsMatch(t, want, testserver.VMSamples(got))
	})
}
