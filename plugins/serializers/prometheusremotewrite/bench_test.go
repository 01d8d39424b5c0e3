package prometheusremotewrite_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
	promparser "github.com/morse-agent/morse/plugins/parsers/prometheus"
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
	scrape, scrapeSamples := scrapeInput(b)
	for _, tc := range []struct {
		name    string
		ms      []morse.Metric
		samples int
		sorted  bool
	}{{"sort=false", ms, samples, false}, {"sort=true", ms, samples, true}, {"scrape", scrape, scrapeSamples, false}} {
		ms, samples, sorted := tc.ms, tc.samples, tc.sorted
		b.Run(tc.name, func(b *testing.B) {
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

// scrapeInput is what inputs.prometheus (metric_version 2) makes of a node exporter's
// scrape, the parser's benchmark input (plugins/parsers/prometheus/testdata/bench.txt):
// one metric per sample, with histograms and a summary.
func scrapeInput(b *testing.B) ([]morse.Metric, int) {
	data, err := os.ReadFile("../../parsers/prometheus/testdata/bench.txt")
	require.NoError(b, err)
	p, err := promparser.New(promparser.Options{MetricVersion: 2}, parsers.Settings{})
	require.NoError(b, err)
	var ms []morse.Metric
	require.NoError(b, p.Parse(data, func(m morse.Metric) { ms = append(ms, m) }))
	buf, err := prw.New(prw.Options{}).AppendBatch(nil, ms)
	require.NoError(b, err)
	n := 0
	for _, s := range decode(b, buf) {
		n += len(s.samples)
	}
	return ms, n
}
