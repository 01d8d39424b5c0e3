package influxdb

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
)

// BenchmarkWritePath measures lines per second from a BatchWriter's buffer into a real
// InfluxDB, with and without gzip. Each iteration adds one batch of 5,000 lines.
func BenchmarkWritePath(b *testing.B) {
	in := testserver.StartInfluxDB(b, testserver.InfluxOptions{})
	const batchSize = 5000
	template := make([]morse.Metric, batchSize)
	for j := range template {
		template[j] = point("cpu", 0, "#host", "host-"+strconv.Itoa(j%100), "#region", "eu-west", "#cpu", "cpu"+strconv.Itoa(j%8),
			"usage_user", float64(j)*0.01, "usage_system", 1.25, "usage_idle", 97.5, "count", int64(j), "ok", true)
	}
	for _, enc := range []string{"identity", "gzip"} {
		b.Run("content_encoding="+enc, func(b *testing.B) {
			o := connected(b, in.URL(), "bench_"+enc, func(o *InfluxDB) { o.ContentEncoding = enc })
			w := batchWriter(b, o, batch.Options{BatchSize: batchSize, BufferLimit: 40 * batchSize, FlushInterval: 100 * time.Millisecond})
			base := time.Now().UnixNano()
			buf := make([]morse.Metric, batchSize)
			var sent int64
			start := time.Now()
			for b.Loop() {
				for j, m := range template {
					buf[j] = m.WithTime(time.Unix(0, base+sent+int64(j)))
				}
				require.NoError(b, w.WriteBatch(buf))
				sent += batchSize
				// Keep the buffer from overflowing: a dropped line would flatter the rate.
				require.Eventually(b, func() bool { return w.Stats().BufferSize < 20*batchSize }, time.Minute, time.Millisecond)
			}
			require.Eventually(b, func() bool { return w.Stats().Written == sent }, time.Minute, time.Millisecond)
			b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "lines/s")
			require.Zero(b, w.Stats().Dropped)
		})
	}
}
