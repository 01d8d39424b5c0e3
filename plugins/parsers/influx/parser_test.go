package influx_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

var now = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)

// point is a metric in a form that compares with require.Equal and prints readably.
type point struct {
	Name   string
	Tags   string
	Fields string
	Time   int64
}

func toPoint(m morse.Metric) point {
	var tags, fields []string
	for _, t := range m.Tags() {
		tags = append(tags, t.Key+"="+t.Value)
	}
	for _, f := range m.Fields() {
		fields = append(fields, fmt.Sprintf("%s=%s:%v", f.Key, f.Value.Type(), f.Value))
	}
	return point{Name: m.Name(), Tags: strings.Join(tags, ","), Fields: strings.Join(fields, ","), Time: m.Time().UnixNano()}
}

func parseString(t *testing.T, p *influx.Parser, in string) ([]point, influx.Result) {
	t.Helper()
	if p.Now == nil {
		p.Now = func() time.Time { return now }
	}
	var got []point
	res := p.Parse([]byte(in), func(m morse.Metric) { got = append(got, toPoint(m)) })
	require.Equal(t, res.Lines, res.Metrics+res.Errors)
	require.Equal(t, len(got), res.Metrics)
	return got, res
}

type lineErr struct {
	Line int
	Msg  string
}

func lineErrs(res influx.Result) []lineErr {
	var out []lineErr
	for _, e := range res.Errs {
		out = append(out, lineErr{e.Line, e.Error()})
	}
	return out
}

func TestBadLinesAmongGoodOnes(t *testing.T) {
	in := "# a comment\n" +
		"cpu,host=a usage=1.5 1000\n" + // 2
		"\n" +
		"p v=2 garbage\n" + // 4
		"mem,host=a used=10i,free=20u,ok=true,name=\"x\" 2000\n" + // 5
		"m,a v=1\n" + // 6
		"  \n" +
		"disk,host=b free=3\n" + // 8 (no timestamp)
		"m v=1.5i\n" + // 9
		"   # an indented comment\n" +
		"net bytes=4 4000" // 11, no final newline
	got, res := parseString(t, &influx.Parser{}, in)
	require.Equal(t, []point{
		{"cpu", "host=a", "usage=float:1.5", 1000},
		{"mem", "host=a", `used=integer:10,free=unsigned:20,ok=boolean:true,name=string:"x"`, 2000},
		{"disk", "host=b", "free=float:3", now.UnixNano()},
		{"net", "", "bytes=float:4", 4000},
	}, got)
	require.Equal(t, 7, res.Lines)
	require.Equal(t, 3, res.Errors)
	require.Equal(t, []lineErr{
		{4, "unable to parse 'p v=2 garbage': bad timestamp"},
		{6, "unable to parse 'm,a v=1': missing tag value"},
		{9, "unable to parse 'm v=1.5i': invalid number"},
	}, lineErrs(res))
	require.Equal(t, res.Errs[0], *res.First)
}

// reasonCases pairs malformed lines with InfluxDB 1.x's reason for refusing them.
var reasonCases = []struct{ line, reason string }{
	{"m v=1 garbage", "bad timestamp"},
	{"m v=1 12a", "bad timestamp"},
	{"m v=1 -", "bad timestamp"},
	{"m v=1 1 2", "point is invalid"},
	{"m", "missing fields"},
	{"m ", "missing fields"},
	{"m,a=1", "missing fields"},
	{"m,a=1 ", "missing fields"},
	{",a=1 v=1", "missing measurement"},
	{"m,a v=1", "missing tag value"},
	{"m,a", "missing tag value"},
	{"m,a= v=1", "missing tag value"},
	{"m,a=1,b v=1", "missing tag value"},
	{"m,=a v=1", "missing tag key"},
	{"m, v=1", "missing tag key"},
	{"m,a=1, v=1", "missing tag key"},
	{"m,a=b=c v=1", "invalid tag format"},
	{"m,a=1,a=2 v=1", "duplicate tags"},
	{"m,b=1,a=2,b=3 v=1", "duplicate tags"},
	{"m v", "invalid field format"},
	{"m v=1,", "invalid field format"},
	{"m v=1,w", "invalid field format"},
	{"m v=1, w=2", "invalid field format"},
	{`m v="a"b`, "invalid field format"},
	{"m =1", "missing field key"},
	{"m v=", "missing field value"},
	{"m v= 1", "missing field value"},
	{"m v=,w=1", "missing field value"},
	{`m v="abc`, "unbalanced quotes"},
	{"m v=abc", "invalid boolean"},
	{"m v=tru", "invalid boolean"},
	{"m v=+1", "invalid boolean"},
	{"m v=NaN", "invalid number"},
	{"m v=-Inf", "invalid number"},
	{"m v=1.2.3", "invalid number"},
	{"m v=1.5i", "invalid number"},
	{"m v=-1u", "invalid number"},
	{"m v=0x1p3", "invalid number"},
	{"m v=1_0", "invalid number"},
	{"m v=1e400", "invalid float"},
	{"m v=9223372036854775808i", `unable to parse integer 9223372036854775808: strconv.ParseInt: parsing "9223372036854775808": value out of range`},
	{"m v=18446744073709551616u", `unable to parse unsigned 18446744073709551616: strconv.ParseUint: parsing "18446744073709551616": value out of range`},
	{"m v=1 9223372036854775807", "time outside range -9223372036854775806 - 9223372036854775806"},
	{"m v=1 99999999999999999999", "time outside range -9223372036854775806 - 9223372036854775806"},
	// No InfluxDB wording fits these; the decoder's own message is kept.
	{"m\x01 v=1", `expected tag key or field but found '\x01' instead`},
	{"m v=\"\xff\"", `invalid utf-8 sequence in token "\xff"`},
}

func TestReasons(t *testing.T) {
	for _, tc := range reasonCases {
		t.Run(tc.line, func(t *testing.T) {
			in, lines := tc.line+"\nok v=1\n", 2
			if strings.Count(tc.line, `"`)%2 == 1 {
				// An open quote takes the rest of the input into its string.
				in, lines = tc.line, 1
			}
			_, res := parseString(t, &influx.Parser{}, in)
			require.Equal(t, lines, res.Lines)
			require.Equal(t, lines-1, res.Metrics, "the next line must still parse")
			require.Equal(t, []lineErr{{1, "unable to parse '" + tc.line + "': " + tc.reason}}, lineErrs(res))
			var pe *influx.ParseError
			require.ErrorAs(t, res.First, &pe)
			require.Equal(t, tc.reason, pe.Reason)
		})
	}
}

func TestAcceptedForms(t *testing.T) {
	cases := []struct {
		line string
		want point
	}{
		{"m v=1", point{"m", "", "v=float:1", now.UnixNano()}},
		{" m  v=1  5 ", point{"m", "", "v=float:1", 5}},
		{"m v=1 5\r", point{"m", "", "v=float:1", 5}},
		{"m,b=2,a=1 v=1 5", point{"m", "a=1,b=2", "v=float:1", 5}},
		{`m\ x\,y,k\ \,\==v\ \,\= f\ \,\==1 5`, point{"m x,y", "k ,==v ,=", "f ,==float:1", 5}},
		{`m v="q\"b\\s" 5`, point{"m", "", `v=string:"q\"b\\s"`, 5}},
		{"m v=t,w=F,x=True,y=FALSE 5", point{"m", "", "v=boolean:true,w=boolean:false,x=boolean:true,y=boolean:false", 5}},
		{"m a=1e+06,b=-1.5E-3,c=.5,d=-0 5", point{"m", "", "a=float:1e+06,b=float:-0.0015,c=float:0.5,d=float:-0", 5}},
		{"m v=-9223372036854775808i,u=18446744073709551615u 5", point{"m", "", "v=integer:-9223372036854775808,u=unsigned:18446744073709551615", 5}},
		{"m v=1 -9223372036854775806", point{"m", "", "v=float:1", -9223372036854775806}},
		{`"m",#k=#v "f"=1 5`, point{`"m"`, "#k=#v", `"f"=float:1`, 5}},
		{"温度,città=Zürich °C=21.5 5", point{"温度", "città=Zürich", "°C=float:21.5", 5}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, res := parseString(t, &influx.Parser{}, tc.line)
			require.Zero(t, res.Errors, "%v", res.Err())
			require.Equal(t, []point{tc.want}, got)
		})
	}
}

func TestCommentsAndBlankLines(t *testing.T) {
	in := "\n\n# one\r\n   \r\n  # two\n\r\na v=1\r\n#\n\n# last, without newline"
	got, res := parseString(t, &influx.Parser{}, in)
	require.Equal(t, []point{{"a", "", "v=float:1", now.UnixNano()}}, got)
	require.Equal(t, 1, res.Lines)

	// A comment holding a control character, and a lone carriage return, are not comments or
	// blank lines to the decoder; they are refused on their own line.
	_, res = parseString(t, &influx.Parser{}, "# tab\there\nb v=1\n\rc v=2\nd v=3")
	require.Equal(t, 4, res.Lines)
	require.Equal(t, 2, res.Metrics)
	require.Equal(t, []int{1, 3}, []int{res.Errs[0].Line, res.Errs[1].Line})
}

func TestMultilineStringsKeepLineNumbers(t *testing.T) {
	in := "a s=\"one\ntwo\nthree\" 1\n" + // lines 1-3
		"b v=x\n" + // 4
		"c s=\"x\ny\",v=1.5i\n" + // 5-6, refused after the string
		"d v=1 2\n" + // 7
		"e,bad s=\"x\ny\" 1\n" + // 8-9, refused before the string
		"f v=bad\n" // 10
	got, res := parseString(t, &influx.Parser{}, in)
	require.Equal(t, []point{
		{"a", "", `s=string:"one\ntwo\nthree"`, 1},
		{"d", "", "v=float:1", 2},
	}, got)
	require.Equal(t, []lineErr{
		{4, "unable to parse 'b v=x': invalid boolean"},
		{5, "unable to parse 'c s=\"x\ny\",v=1.5i': invalid number"},
		{8, "unable to parse 'e,bad s=\"x\ny\" 1': missing tag value"},
		{10, "unable to parse 'f v=bad': invalid boolean"},
	}, lineErrs(res))
}

func TestPrecision(t *testing.T) {
	cases := []struct {
		prec string
		want int64
		now  int64
	}{
		{"", 1_000_000, now.UnixNano()},
		{"ns", 1_000_000, now.UnixNano()},
		{"u", 1_000_000 * int64(time.Microsecond), now.Truncate(time.Microsecond).UnixNano()},
		{"ms", 1_000_000 * int64(time.Millisecond), now.Truncate(time.Millisecond).UnixNano()},
		{"s", 1_000_000 * int64(time.Second), now.Truncate(time.Second).UnixNano()},
		{"m", 1_000_000 * int64(time.Minute), now.Truncate(time.Minute).UnixNano()},
		{"h", 1_000_000 * int64(time.Hour), now.Truncate(time.Hour).UnixNano()},
	}
	for _, tc := range cases {
		t.Run(tc.prec, func(t *testing.T) {
			d, err := influx.ParsePrecision(tc.prec)
			require.NoError(t, err)
			got, res := parseString(t, &influx.Parser{Precision: d}, "m v=1 1000000\nm v=2")
			require.Zero(t, res.Errors, "%v", res.Err())
			require.Equal(t, []int64{tc.want, tc.now}, []int64{got[0].Time, got[1].Time})
		})
	}
	_, err := influx.ParsePrecision("d")
	require.EqualError(t, err, `invalid precision "d" (use n, u, ms, s, m or h)`)

	_, res := parseString(t, &influx.Parser{Precision: time.Hour}, "m v=1 3000000")
	require.Equal(t, "time outside range -9223372036854775806 - 9223372036854775806", res.First.Err.Error())
}

// TestNowIsReadOncePerParseAndOnlyWhenNeeded: the entries of one input share one time, and
// an input whose entries all carry a timestamp never reads the clock.
func TestNowIsReadOncePerParseAndOnlyWhenNeeded(t *testing.T) {
	calls := 0
	p := &influx.Parser{Now: func() time.Time { calls++; return now.Add(time.Duration(calls)) }}
	got, _ := parseString(t, p, "a v=1\nb v=2 5\nc v=3")
	require.Equal(t, 1, calls)
	require.Equal(t, got[0].Time, got[2].Time)
	require.Equal(t, int64(5), got[1].Time)

	_, _ = parseString(t, p, "a v=1 1\nb v=2 2\n")
	require.Equal(t, 1, calls, "every entry is stamped")
	got, _ = parseString(t, p, "a v=1 1\nb v=2\n")
	require.Equal(t, 2, calls)
	require.Equal(t, now.Add(2).UnixNano(), got[1].Time)
}

func TestErrorsAreCountedButFewAreKept(t *testing.T) {
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "bad%d\ngood v=%d\n", i, i)
	}
	_, res := parseString(t, &influx.Parser{}, b.String())
	require.Equal(t, 50, res.Lines)
	require.Equal(t, 25, res.Metrics)
	require.Equal(t, 25, res.Errors)
	require.Len(t, res.Errs, influx.MaxKeptErrors)
	require.Equal(t, 1, res.First.Line)
	require.Equal(t, 19, res.Errs[9].Line)
	msg := res.Err().Error()
	require.True(t, strings.HasPrefix(msg, "unable to parse 'bad0': missing fields\nunable to parse 'bad1': missing fields\n"), msg)
	require.True(t, strings.HasSuffix(msg, "\n(15 more lines could not be parsed)"), msg)

	_, res = parseString(t, &influx.Parser{}, "ok v=1")
	require.NoError(t, res.Err())
}

func TestLongLinesAreQuotedShort(t *testing.T) {
	long := "m,host=" + strings.Repeat("é", 100) + " v=1 bad"
	_, res := parseString(t, &influx.Parser{}, long)
	text := res.First.Text
	require.LessOrEqual(t, len(text), 103)
	require.True(t, strings.HasSuffix(text, "..."))
	require.True(t, strings.HasPrefix(long, strings.TrimSuffix(text, "...")), "cut on a character boundary")
}

func TestMetricAllocations(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "cpu,host=web-%d,region=eu,cpu=cpu%d usage_user=%d.5,usage_idle=90,ok=true,n=%di %d\n", i, i%4, i, i, 1700000000+i)
	}
	data := []byte(b.String())
	p := &influx.Parser{}
	allocs := testing.AllocsPerRun(20, func() { p.Parse(data, func(morse.Metric) {}) })
	// One string for the names, keys and values, one tag slice and one field slice per line,
	// plus a few per call for the decoder and the growing scratch buffers.
	require.LessOrEqual(t, allocs, 3*100.0+20)
}
