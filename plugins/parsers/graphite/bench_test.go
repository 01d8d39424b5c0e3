package graphite_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/graphite"
)

// BenchTemplates are BenchmarkParse's templates; Telegraf's parser is fed the same.
var BenchTemplates = []string{
	"servers.* .host.measurement*",
	"stats.*.*.* measurement.region.host.field region=eu",
	"carbon.agents.* ..host.measurement.field*",
	"*.* .wrong.measurement*",
	"servers.localhost .host.measurement*",
	"prod.*.mem .host.measurement*",
}

// BenchmarkParse reads testdata/bench.txt (500 lines, five shapes of path, some with
// Graphite tags, matched by filters with and without wildcards): ns and allocations per
// metric, elapsed and CPU time.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/bench.txt")
	require.NoError(b, err)
	p, err := graphite.New(graphite.Options{Separator: "_", Templates: BenchTemplates}, parsers.Settings{})
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
	b.ReportMetric(float64(testutil.CPUTime(b)-cpu)/float64(n), "cpu-ns/metric")
}

// FuzzParse holds the parser to never panic and to emit metrics of one field.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/input.txt")
	require.NoError(f, err)
	f.Add(data, "_")
	f.Add([]byte("a.b;c=d;e 1 -1\nx y z w"), ".")
	f.Fuzz(func(t *testing.T, data []byte, sep string) {
		p, err := graphite.New(graphite.Options{Separator: sep, Templates: BenchTemplates}, parsers.Settings{})
		require.NoError(t, err)
		err = p.Parse(data, func(m morse.Metric) { require.Len(t, m.Fields(), 1) })
		if err != nil {
			require.Positive(t, parsers.Refused(err))
		}
	})
}
