package dataformat_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
)

// benchMetrics reads testdata/bench.influx, 1000 lines of the load generator's mix (cpu,
// mem, disk, net ...), as expanded metrics: the same bytes can be fed to Telegraf's
// serializers for a side-by-side figure.
func benchMetrics(b *testing.B) []morse.Metric {
	data, err := os.ReadFile("testdata/bench.influx")
	require.NoError(b, err)
	var ms []morse.Metric
	res := (&parser.Parser{}).Parse(data, func(m morse.Metric) { ms = append(ms, m.Expanded()) })
	require.Zero(b, res.Errors)
	return ms
}

// BenchmarkSerialize writes the 1000 metrics into one reused buffer with each format, one
// metric at a time (batch=false, Telegraf's Serialize) and as one batch (batch=true,
// Telegraf's SerializeBatch), and reports ns and allocations per metric.
func BenchmarkSerialize(b *testing.B) {
	ms := benchMetrics(b)
	for _, format := range dataformat.Formats() {
		for _, batch := range []bool{false, true} {
			name := format + "/batch=false"
			if batch {
				name = format + "/batch=true"
			}
			b.Run(name, func(b *testing.B) {
				cfg := dataformat.Config{DataFormat: format}
				ser, err := cfg.New()
				require.NoError(b, err)
				buf, err := serializers.Append(ser, nil, ms, batch)
				require.NoError(b, err)
				b.ReportAllocs()
				for b.Loop() {
					buf, _ = serializers.Append(ser, buf[:0], ms, batch)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ms)), "ns/metric")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
