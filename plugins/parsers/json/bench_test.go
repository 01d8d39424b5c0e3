package json_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// BenchmarkParse reads Telegraf's own benchmark input (testdata/benchmark.json, two objects)
// with its benchmark's options, so that the same bytes can be fed to Telegraf's parser.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/benchmark.json")
	require.NoError(b, err)
	p := newParser(b, `tag_keys = ["tags_*"]`)
	n := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := p.Parse(data, func(morse.Metric) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
}
