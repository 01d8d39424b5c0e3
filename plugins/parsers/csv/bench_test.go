package csv_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/csv"
)

// BenchmarkParse reads testdata/bench.csv (a header and 1000 rows of tags, floats, ints,
// bools, strings and a Unix timestamp) with testdata/bench.toml's options, the input and
// config to feed Telegraf's parser for the side-by-side figure.
func BenchmarkParse(b *testing.B) {
	var o csv.Options
	_, err := toml.DecodeFile("testdata/bench.toml", &o)
	require.NoError(b, err)
	data, err := os.ReadFile("testdata/bench.csv")
	require.NoError(b, err)
	p := newParser(b, o)
	n := 0
	emit := func(morse.Metric) { n++ }
	require.NoError(b, p.Parse(data, emit))
	require.Equal(b, 1000, n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n = 0
	for b.Loop() {
		if err := p.Parse(data, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
}

// fuzzOptions are the configurations FuzzParse runs; the fuzzer picks one.
var fuzzOptions = []csv.Options{
	{HeaderRowCount: 1},
	{HeaderRowCount: 2, SkipRows: 1, SkipColumns: 1, TrimSpace: true, Comment: "#"},
	{ColumnNames: []string{"a", "b", "c"}, ColumnTypes: []string{"int", "float", "bool"}, TagColumns: []string{"b"}},
	{HeaderRowCount: 1, MetadataRows: 2, MetadataSeparators: []string{":", "="}, MetadataTrimSet: " #",
		TimestampColumn: "t", TimestampFormat: "unix_ms", MeasurementColumn: "m", TagOverwrite: true},
	{ColumnNames: []string{"t", "v"}, TimestampColumn: "t", TimestampFormat: "2006-01-02 15:04:05 MST",
		Delimiter: "\x00", SkipValues: []string{""}},
	{HeaderRowCount: 1, Delimiter: ";", TimestampColumn: "t", TimestampFormat: "timestamp_tz_us", Timezone: "Asia/Jakarta"},
}

// FuzzParse checks that no input panics a parser, whole or line by line, and that what
// comes out is a metric: a name and at least one named field.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"a,b\n1,2\n", "a,b\n\"x\ny\",1\n", "x\"y,1\n", "# m: v\nt,m,v\n1,cpu,2\n",
		"\"unterminated\n", "a;b;t\n1;2;1700000000000000\n", "t\x00v\n2024-01-02 10:00:00 CET\x001\n",
		"col,col\n1,2\n80,test_name", ",,,\n,,,\n", "a,t\n1,1e400\n",
	} {
		for i := range fuzzOptions {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		o := fuzzOptions[int(which)%len(fuzzOptions)]
		check := func(m morse.Metric) {
			if len(m.Fields()) == 0 {
				t.Fatalf("a metric without fields from %q", data)
			}
			for _, fl := range m.Fields() {
				if fl.Key == "" {
					t.Fatalf("an unnamed field from %q", data)
				}
			}
		}
		whole, err := csv.New(o, parsers.Settings{MetricName: "csv"})
		require.NoError(t, err)
		checkErr(t, whole.Parse(data, check))
		lines, err := csv.New(o, parsers.Settings{MetricName: "csv"})
		require.NoError(t, err)
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			checkErr(t, lines.ParseLine(line, check))
		}
	})
}

func checkErr(t *testing.T, err error) {
	if err == nil {
		return
	}
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Positive(t, pe.Refused)
	for _, e := range pe.Entries {
		require.Positive(t, e.Line)
		require.LessOrEqual(t, len(e.Text), parsers.MaxText+len("..."), "quoted as parsers.Excerpt cuts it")
	}
}
