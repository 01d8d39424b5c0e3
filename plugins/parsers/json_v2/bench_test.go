package json_v2_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/json_v2"
)

// BenchmarkParse reads Telegraf's own benchmark case (testdata/benchmark: its telegraf.conf
// and input.json), so that the same bytes and options can be fed to Telegraf's parser.
func BenchmarkParse(b *testing.B) {
	in := loadConf(b, "testdata/benchmark/telegraf.conf")[0]
	data, err := os.ReadFile(in.Files[0])
	require.NoError(b, err)
	p, err := json_v2.New(in.Options, parsers.Settings{MetricName: "file"})
	require.NoError(b, err)
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

// FuzzParse feeds arbitrary documents to the parser of Telegraf's benchmark case: it must
// not panic, and what it refuses it reports as a *parsers.Error.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"benchmark/input.json", "complex_nesting/input.json", "types/input.json"} {
		if data, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(data)
		}
	}
	in := loadConf(f, "testdata/benchmark/telegraf.conf")[0]
	p, err := json_v2.New(in.Options, parsers.Settings{MetricName: "file"})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := p.Parse(data, func(morse.Metric) {}); err != nil {
			var pe *parsers.Error
			require.ErrorAs(t, err, &pe)
			require.Positive(t, pe.Refused)
		}
	})
}
