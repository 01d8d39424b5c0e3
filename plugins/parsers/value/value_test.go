package value

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
)

var settings = parsers.Settings{MetricName: "value_test", Now: func() time.Time { return time.Unix(0, 0) }}

// cases are the inputs of Telegraf 1.39.3's plugins/parsers/value tests, and the trimming
// and multi-line payloads its Parse handles; testdata/telegraf.golden holds what each
// gives, as Telegraf's tests expect it.
var cases = []struct {
	name, dataType, input string
}{
	{"integer", "integer", "55"},
	{"float", "float", "64"},
	{"string", "string", "foobar"},
	{"base64", "base64", "foobar"},
	{"boolean", "boolean", "true"},
	{"multiple integers", "integer", "55 45 223 12 999"},
	{"auto integer", "auto_integer", "55"},
	{"auto integer with string", "auto_integer", "foobar"},
	{"auto integer with float", "auto_integer", "55.0"},
	{"auto float", "auto_float", "64.2"},
	{"auto float with string", "auto_float", "foobar"},
	{"auto float with integer", "auto_float", "64"},
	{"invalid integer", "integer", "55.0"},
	{"invalid float", "float", "foobar"},
	{"invalid boolean", "boolean", "213"},
	{"null character", "integer", "55\x00"},
	{"default data type", "", "5"},
	{"aliases int", "int", "7"},
	{"aliases long", "long", "7"},
	{"aliases str", "str", " a b \n"},
	{"aliases bool", "bool", "F"},
	{"last line wins", "integer", "1\n2\n3\n"},
	{"bad last line", "float", "1.5\n2.5\nthree\n"},
	{"string keeps lines", "string", "  one\ntwo  \n"},
	{"base64 of the payload as it came", "base64", " foo\n"},
	{"empty", "integer", ""},
	{"blank", "float", " \n\t"},
	{"empty string", "string", "\n"},
	{"unicode space", "integer", "1\u00a02"},
}

func TestTelegrafCases(t *testing.T) {
	var b strings.Builder
	for _, c := range cases {
		p, err := New(Options{DataType: c.dataType}, settings)
		require.NoError(t, err)
		var got []morse.Metric
		err = p.Parse([]byte(c.input), func(m morse.Metric) { got = append(got, m) })
		fmt.Fprintf(&b, "%s (data_type %q, input %q):\n", c.name, c.dataType, c.input)
		for _, line := range testutil.Canon(got) {
			fmt.Fprintf(&b, "  %s\n", line)
		}
		if err != nil {
			fmt.Fprintf(&b, "  refused %d: %v\n", parsers.Refused(err), err)
		}
	}
	testutil.Golden(t, "testdata/telegraf.golden", []byte(b.String()))
}

func TestFieldName(t *testing.T) {
	p, err := New(Options{DataType: "integer", ValueFieldName: "penguin"}, settings)
	require.NoError(t, err)
	var got []morse.Metric
	require.NoError(t, p.Parse([]byte("55"), func(m morse.Metric) { got = append(got, m) }))
	require.Equal(t, []string{"value_test penguin=integer:55 0"}, testutil.Canon(got))
}

func TestValidate(t *testing.T) {
	o := Options{DataType: "foo"}
	require.EqualError(t, o.Validate(), `data_type: unknown data type "foo": use "integer", "float", "string", "base64", "boolean", "auto_integer" or "auto_float"`)
	_, err := New(o, settings)
	require.Error(t, err)
}

// BenchmarkParse reads testdata/bench.txt, a command's output of one value, as exec does.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/bench.txt")
	require.NoError(b, err)
	p, err := New(Options{DataType: "float"}, settings)
	require.NoError(b, err)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := p.Parse(data, func(morse.Metric) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
}
