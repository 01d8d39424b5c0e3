package logfmt

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

var settings = parsers.Settings{MetricName: "testlog", Now: func() time.Time { return time.Unix(0, 0) }}

// cases are the inputs of Telegraf 1.39.3's plugins/parsers/logfmt tests (Parse, ParseLine,
// tags and the benchmark data), and lines around a malformed one; testdata/telegraf.golden
// holds what each gives.
var cases = []struct {
	name    string
	tagKeys []string
	input   string
}{
	{"no bytes returns no metrics", nil, ""},
	{"test without trailing end", nil, `foo="bar"`},
	{"test with trailing end", nil, "foo=\"bar\"\n"},
	{"logfmt parser returns all the fields", nil, `ts=2018-07-24T19:43:40.275Z lvl=info msg="http request" method=POST`},
	{"logfmt parser parses every line", nil, "ts=2018-07-24T19:43:40.275Z lvl=info msg=\"http request\" method=POST\nparent_id=088876RL000 duration=7.45 log_id=09R4e4Rl000"},
	{"keys without = or values are ignored", nil, `i am no data.`},
	{"keys without values are ignored", nil, `foo="" bar=`},
	{"unterminated quote produces error", nil, `bar=baz foo="bar`},
	{"malformed key", nil, `"foo=" bar=baz`},
	{"Log parser fmt returns all fields", nil, `ts=2018-07-24T19:43:35.207268Z lvl=5 msg="Write failed" log_id=09R4e4Rl000`},
	{"logfmt parser returns tags and fields", []string{"lvl"}, "ts=2018-07-24T19:43:40.275Z lvl=info msg=\"http request\" method=POST"},
	{"logfmt parser returns no empty metrics", []string{"lvl"}, "lvl=info"},
	{"logfmt parser returns all keys as tag", []string{"*"}, "ts=2018-07-24T19:43:40.275Z lvl=info msg=\"http request\" method=POST"},
	{"benchmark data", []string{"tags_host", "tags_platform", "tags_sdkver"}, "tags_host=myhost tags_platform=python tags_sdkver=3.11.5 value=5\ntags_host=myhost tags_platform=python tags_sdkver=3.11.4 value=4\n"},
	{"tag globs", []string{"tags_*"}, "tags_host=myhost value=5 other=x\n"},
	{"types", nil, `i=-3 f=1.5e3 b=true s=yes q="a \"quoted\" value" n=nan`},
	{"repeated key keeps the last", nil, "a=1 a=2\n"},
	{"bad lines among good", nil, "a=1\nb=\"open\r\nc=3\r\n\"d=4\n\ne=5"},
	{"every line bad", nil, "x=\"\ny=\"\n"},
}

func TestTelegrafCases(t *testing.T) {
	var b strings.Builder
	for _, c := range cases {
		p, err := New(Options{LogfmtTagKeys: c.tagKeys}, settings)
		require.NoError(t, err)
		var got []morse.Metric
		err = p.Parse([]byte(c.input), func(m morse.Metric) { got = append(got, m) })
		fmt.Fprintf(&b, "%s (logfmt_tag_keys %q, input %q):\n", c.name, c.tagKeys, c.input)
		for _, m := range got {
			fmt.Fprintf(&b, "  %s\n", testutil.Canon([]morse.Metric{m})[0])
		}
		if err != nil {
			fmt.Fprintf(&b, "  refused %d:\n", parsers.Refused(err))
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(&b, "    %s\n", line)
			}
		}
	}
	testutil.Golden(t, "testdata/telegraf.golden", []byte(b.String()))
}

func TestValidate(t *testing.T) {
	o := Options{LogfmtTagKeys: []string{"a[", "b"}}
	err := o.Validate()
	require.ErrorContains(t, err, "logfmt_tag_keys")
	_, err = New(o, settings)
	require.Error(t, err)
}

// TestLongLine reads a line beyond the 64 KiB that Telegraf's decoder stops at.
func TestLongLine(t *testing.T) {
	p, err := New(Options{}, settings)
	require.NoError(t, err)
	long := strings.Repeat("x", 100<<10)
	var got []morse.Metric
	require.NoError(t, p.Parse([]byte("a=1\nb="+long+"\nc=3\n"), func(m morse.Metric) { got = append(got, m) }))
	require.Len(t, got, 3)
	v, _ := got[1].Field("b")
	require.Equal(t, long, v.Str())
}

// BenchmarkParse reads testdata/bench.txt, Telegraf's benchmark data, with its tag keys.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/bench.txt")
	require.NoError(b, err)
	p, err := New(Options{LogfmtTagKeys: []string{"tags_host", "tags_platform", "tags_sdkver"}}, settings)
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
