package influx

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	serializer "github.com/morse-agent/morse/plugins/serializers/influx"
)

// lineParse is what a parse with line metrics produced: the points (line metrics expanded)
// and how many came as line metrics.
type lineParse struct {
	parsed
	asLines int
}

func parseLines(t *testing.T, data []byte) lineParse {
	t.Helper()
	p := &Parser{Now: func() time.Time { return fuzzNow }, LineMetrics: func() bool { return true }}
	var out lineParse
	res := p.Parse(data, func(m morse.Metric) {
		out.Points = append(out.Points, pointOf(m))
		if _, ok := m.Line(); !ok {
			return
		}
		out.asLines++
		// The serializer writes the text so that it reads back as the expanded metric
		// would have been written, with and without unsigned integers.
		for _, uints := range []bool{true, false} {
			s := serializer.New(serializer.Options{UintSupport: uints})
			text, err := s.AppendMetric(nil, m)
			require.NoError(t, err)
			plain, err := s.AppendMetric(nil, m.Expanded())
			require.NoError(t, err)
			got, _ := parseWith(text, true)
			want, _ := parseWith(plain, true)
			require.Zero(t, got.Errs, "text %q", text)
			require.Equal(t, want, got, "text %q, uints %v", text, uints)
		}
	})
	out.Lines, out.Metrics, out.Errs = res.Lines, res.Metrics, res.Errors
	for _, e := range res.Errs {
		out.Kept = append(out.Kept, fmt.Sprintf("%d: %s", e.Line, e.Error()))
	}
	return out
}

// checkLines holds line metrics to the reference path: the same metrics once expanded, the
// same errors, and text that the serializer writes as it writes the expanded metric.
func checkLines(t *testing.T, data []byte) {
	t.Helper()
	ref, _ := parseWith(data, true)
	got := parseLines(t, data)
	require.Equal(t, ref, got.parsed, "input %q", data)
}

// TestLineMetricsMatchReference: line metrics expand to what the reference path makes, for
// entries that qualify and entries that do not, valid or not.
func TestLineMetricsMatchReference(t *testing.T) {
	for _, in := range differentialEntries {
		checkLines(t, []byte(in))
	}
}

// TestLineMetricsTakeRealisticLines: nearly every line that senders send qualifies. Only the
// entries whose text InfluxDB 1.x would read differently (a string with `\n`) are parsed.
func TestLineMetricsTakeRealisticLines(t *testing.T) {
	data := realisticLines(400)
	checkLines(t, data)
	got := parseLines(t, data)
	require.Zero(t, got.Errs)
	require.Equal(t, 400, got.asLines)
}

// TestLineMetricText: the text is the entry without its timestamp, flagged when it has
// unsigned integers; the time is the entry's, or the read's.
func TestLineMetricText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want morse.LineText
		ts   int64
	}{
		{"m,a=b v=1u,w=2i 17\n", morse.LineText{Text: "m,a=b v=1u,w=2i", Uints: true}, 17},
		{"m,a=b v=1i,w=\"2u\" 17\n", morse.LineText{Text: "m,a=b v=1i,w=\"2u\""}, 17},
		{"m v=1  \n", morse.LineText{Text: "m v=1"}, fuzzNow.UnixNano()},
		{"app\\ events,p=a\\,b s=\"q\\\"\" -5", morse.LineText{Text: "app\\ events,p=a\\,b s=\"q\\\"\""}, -5},
	} {
		p := &Parser{Now: func() time.Time { return fuzzNow }, LineMetrics: func() bool { return true }}
		var got []morse.Metric
		res := p.Parse([]byte(tc.in), func(m morse.Metric) { got = append(got, m) })
		require.Zero(t, res.Errors)
		require.Len(t, got, 1)
		lt, ok := got[0].Line()
		require.True(t, ok, "%q is a line metric", tc.in)
		require.Equal(t, tc.want, lt)
		require.Equal(t, tc.ts, got[0].Time().UnixNano())
	}
}

// TestLineMetricsInStreams: ParseReader makes line metrics too, however the stream is cut,
// and asks for the mode on every read. An entry cut by the end of a read waits for the
// next one, so every line qualifies, as in one Parse of the whole input.
func TestLineMetricsInStreams(t *testing.T) {
	data := realisticLines(200)
	ref, _ := parseWith(data, true)
	for _, chunk := range []int{1, 7, 4096} {
		reads := 0
		p := &Parser{Now: func() time.Time { return fuzzNow }, LineMetrics: func() bool { reads++; return true }}
		var pts []fuzzPoint
		lines := 0
		err := p.ParseReader(&chunkReader{r: bytes.NewReader(data), n: chunk}, func(m morse.Metric) {
			pts = append(pts, pointOf(m))
			if _, ok := m.Line(); ok {
				lines++
			}
		}, nil)
		require.NoError(t, err)
		require.Equal(t, ref.Points, pts, "chunks of %d", chunk)
		require.Equal(t, len(ref.Points), lines, "chunks of %d", chunk)
		require.GreaterOrEqual(t, reads, len(data)/chunk)
	}
}

// TestLineMetricNumbers: a number qualifies exactly when it is plain and in range, at its
// bounds too, and either way the metrics match the reference path's.
func TestLineMetricNumbers(t *testing.T) {
	long := strings.Repeat("9", 200)
	for _, tc := range []struct {
		value   string
		qualify bool
	}{
		{"9223372036854775807i", true}, {"9223372036854775808i", false},
		{"-9223372036854775808i", true}, {"-9223372036854775809i", false},
		{"999999999999999999i", true}, {"10000000000000000000i", false}, {"0i", true}, {"-0i", true},
		{"18446744073709551615u", true}, {"18446744073709551616u", false}, {"99999999999999999999u", false},
		{"1844674407370955161u", true}, {"0u", true}, {"-1u", false}, {"01u", false},
		{"1.5", true}, {"-0.000001", true}, {"0.5e-07", true}, {"1E99", true}, {"1e+99", true},
		{"1e308", true}, {"1e309", false}, {"1.7976931348623157e308", true}, {"1e-400", true},
		{long + ".5", true}, {long + "e99", true}, {long + "e200", false}, {strings.Repeat("9", 308), true},
		{strings.Repeat("9", 309), false}, {"1.", false}, {".5", false}, {"1e", false}, {"1e+", false},
		{"1.5.5", false}, {"1i5", false}, {"1ii", false}, {"+1", false}, {"-", false}, {"00.5", false},
	} {
		in := []byte("m,a=b v=" + tc.value + ",w=1i 17\n")
		checkLines(t, in)
		got := parseLines(t, in)
		require.Equal(t, tc.qualify, got.asLines == 1, "%s", tc.value)
	}
}

// TestLineMetricTextOutlivesItsRead: the text of a line metric is its own, and stays so
// while later reads are parsed into the same buffers, short lines and long ones alike.
func TestLineMetricTextOutlivesItsRead(t *testing.T) {
	p := &Parser{LineMetrics: func() bool { return true }}
	long := "m,a=b s=\"" + strings.Repeat("x", lineArenaSize) + "\" 1\n"
	var kept []morse.Metric
	var want []string
	buf := make([]byte, 0, 1<<12)
	for i := range 500 {
		buf = fmt.Appendf(buf[:0], "m,a=%d v=%di %d\n", i, i, i)
		if i%50 == 0 {
			buf = append(buf, long...)
		}
		p.Parse(buf, func(m morse.Metric) {
			lt, ok := m.Line()
			require.True(t, ok)
			kept, want = append(kept, m), append(want, strings.Clone(lt.Text))
		})
		clear(buf) // as a listener reuses its read buffer
	}
	for i, m := range kept {
		lt, _ := m.Line()
		require.Equal(t, want[i], lt.Text)
	}
}
