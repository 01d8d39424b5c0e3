package prometheus_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
)

// BenchmarkParse reads testdata/bench.txt (a node exporter's scrape: counters and gauges
// with labels, a summary, histograms, timestamps; 310 samples) and Telegraf's own
// benchmark input, with both metric versions: ns and allocations per metric. The same
// files can be fed to Telegraf's parser for the side-by-side figures.
func BenchmarkParse(b *testing.B) {
	for _, file := range []string{"testdata/bench.txt", "testdata/telegraf/benchmark/input.txt"} {
		data, err := os.ReadFile(file)
		require.NoError(b, err)
		for _, version := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/v%d", file, version), func(b *testing.B) {
				p, err := prometheus.New(prometheus.Options{MetricVersion: version}, parsers.Settings{})
				require.NoError(b, err)
				n := 0
				emit := func(morse.Metric) { n++ }
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				cpu := testutil.CPUTime(b)
				for b.Loop() {
					if err := p.Parse(data, emit); err != nil {
						b.Fatal(err)
					}
				}
				// CPU time as well as elapsed time: on a loaded machine the process's own
				// CPU time is what compares with another parser's run.
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
				b.ReportMetric(float64(testutil.CPUTime(b)-cpu)/float64(n), "cpu-ns/metric")
			})
		}
	}
}

// FuzzParse holds the parser to never panic, to emit only metrics with fields, and to
// count every refused line.
func FuzzParse(f *testing.F) {
	for _, file := range []string{"testdata/features.txt", "testdata/telegraf/valid_histogram/input.txt", "testdata/telegraf/valid_summary/input.txt"} {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("m{a=\"b\",} 1 2\n# TYPE x summary\nx_count 1\n{\"q\"} 3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, version := range []int{1, 2} {
			p, err := prometheus.New(prometheus.Options{MetricVersion: version}, parsers.Settings{})
			require.NoError(t, err)
			err = p.Parse(data, func(m morse.Metric) {
				require.NotEmpty(t, m.Fields())
				require.NotEmpty(t, m.Name())
			})
			if err != nil {
				var perr *parsers.Error
				require.ErrorAs(t, err, &perr)
				require.Positive(t, perr.Refused)
			}
		}
	})
}
