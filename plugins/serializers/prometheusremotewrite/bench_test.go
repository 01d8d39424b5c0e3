package prometheusremotewrite_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
	prw "github.com/morse-agent/morse/plugins/serializers/prometheusremotewrite"
)

// benchInput is the serializers' benchmark input, 1000 lines of the load generator's mix
// (plugins/serializers/dataformat/testdata/bench.influx), as expanded metrics, and the
// number of samples they make: the same bytes are fed to Telegraf's serializer for the
// figure in docs/bench/prometheusremotewrite.md.
func benchInput(b *testing.B) ([]morse.Metric, int) {
	data, err := os.ReadFile("../dataformat/testdata/bench.influx")
	require.NoError(b, err)
	var ms []morse.Metric
	res := (&parser.Parser{}).Parse(data, func(m morse.Metric) { ms = append(ms, m.Expanded()) })
	require.Zero(b, res.Errors)
	buf, err := prw.New(prw.Options{}).AppendBatch(nil, ms)
	require.NoError(b, err)
	n := 0
	for _, s := range decode(b, buf) {
		n += len(s.samples)
	}
	return ms, n
}

// BenchmarkSerialize writes the 1000 metrics as one request (Telegraf's SerializeBatch,
// what outputs.http sends by default) and reports ns and allocations per sample.
func BenchmarkSerialize(b *testing.B) {
	ms, samples := benchInput(b)
	for _, sorted := range []bool{false, true} {
		name := "sort=false"
		if sorted {
			name = "sort=true"
		}
		b.Run(name, func(b *testing.B) {
			s := prw.New(prw.Options{SortMetrics: sorted})
			buf, _ := s.AppendBatch(nil, ms)
			b.ReportAllocs()
			cpu := testutil.CPUTime(b)
			for b.Loop() {
				buf, _ = s.AppendBatch(buf[:0], ms)
			}
			// The process's CPU time as well: on a loaded machine it compares runs where
			// elapsed time does not.
			b.ReportMetric(float64((testutil.CPUTime(b)-cpu).Nanoseconds())/float64(b.N*samples), "cpu-ns/sample")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*samples), "ns/sample")
			b.ReportMetric(float64(testing.AllocsPerRun(1, func() { buf, _ = s.AppendBatch(buf[:0], ms) }))/float64(samples), "allocs/sample")
			b.ReportMetric(0, "ns/op")
		})
	}
}
