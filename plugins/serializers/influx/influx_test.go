package influx_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/influx"
	"github.com/morse-agent/morse/selfstat"
)

// ts is the timestamp most cases use: 2023-11-14T22:13:20.123456789Z.
var ts = time.Unix(1700000000, 123456789)

func tags(kv ...string) []morse.Tag {
	out := make([]morse.Tag, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, morse.Tag{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func fields(kv ...any) []morse.Field {
	out := make([]morse.Field, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		v, ok := morse.ValueOf(kv[i+1])
		if !ok {
			panic("unsupported field value")
		}
		out = append(out, morse.Field{Key: kv[i].(string), Value: v})
	}
	return out
}

func line(t *testing.T, s *influx.Serializer, m morse.Metric) string {
	t.Helper()
	b, err := s.AppendMetric(nil, m)
	require.NoError(t, err)
	return string(b)
}

func TestEscaping(t *testing.T) {
	cases := []struct {
		name string
		m    morse.Metric
		want string
	}{
		{"plain", morse.NewMetric("cpu", tags("host", "a"), fields("v", 1.5), ts),
			"cpu,host=a v=1.5 1700000000123456789\n"},
		{"measurement comma and space", morse.NewMetric("my cpu,total", nil, fields("v", 1.0), ts),
			`my\ cpu\,total v=1 1700000000123456789` + "\n"},
		{"measurement equals sign is not escaped", morse.NewMetric("a=b", nil, fields("v", 1.0), ts),
			"a=b v=1 1700000000123456789\n"},
		{"tag key comma equals space", morse.NewMetric("m", tags("a,b=c d", "v"), fields("v", 1.0), ts),
			`m,a\,b\=c\ d=v v=1 1700000000123456789` + "\n"},
		{"tag value comma equals space", morse.NewMetric("m", tags("k", "x,y=z w"), fields("v", 1.0), ts),
			`m,k=x\,y\=z\ w v=1 1700000000123456789` + "\n"},
		{"field key comma equals space", morse.NewMetric("m", nil, fields("f,g=h i", 1.0), ts),
			`m f\,g\=h\ i=1 1700000000123456789` + "\n"},
		{"string value quote and backslash", morse.NewMetric("m", nil, fields("s", `say "hi" \o/`), ts),
			`m s="say \"hi\" \\o/" 1700000000123456789` + "\n"},
		{"string value keeps newline and tab raw", morse.NewMetric("m", nil, fields("s", "a\nb\tc"), ts),
			"m s=\"a\nb\tc\" 1700000000123456789\n"},
		{"string value with comma equals space is not escaped", morse.NewMetric("m", nil, fields("s", "a, b=c"), ts),
			`m s="a, b=c" 1700000000123456789` + "\n"},
		{"newline tab cr ff in names become two characters",
			morse.NewMetric("m\nx", tags("k\t", "v\r"), fields("f\f", 1.0), ts),
			`m\nx,k\t=v\r f\f=1 1700000000123456789` + "\n"},
		{"other control bytes become U+FFFD", morse.NewMetric("m\x00", tags("k", "\x01v\x7f"), fields("f", 1.0), ts),
			"m\uFFFD,k=\uFFFDv\uFFFD f=1 1700000000123456789\n"},
		{"invalid UTF-8 becomes U+FFFD", morse.NewMetric("m\xff\xfe", nil, fields("s", "a\xffb"), ts),
			"m\uFFFD s=\"a\uFFFDb\" 1700000000123456789\n"},
		{"unicode is written as it is", morse.NewMetric("température", tags("ville", "Zürich 東京"), fields("°C", 21.5, "note", "☀"), ts),
			`température,ville=Zürich\ 東京 °C=21.5,note="☀" 1700000000123456789` + "\n"},
		{"empty tag value is left out", morse.NewMetric("m", tags("a", "", "b", "2"), fields("v", 1.0), ts),
			"m,b=2 v=1 1700000000123456789\n"},
		{"empty tag key is left out", morse.NewMetric("m", tags("", "x", "b", "2"), fields("v", 1.0), ts),
			"m,b=2 v=1 1700000000123456789\n"},
		{"trailing backslashes are removed", morse.NewMetric(`m\`, tags(`k\\`, `v\`), fields(`f\`, 1.0), ts),
			`m,k=v f=1 1700000000123456789` + "\n"},
		{"a tag that is only backslashes is left out", morse.NewMetric("m", tags("k", `\\`), fields("v", 1.0), ts),
			"m v=1 1700000000123456789\n"},
		{"inner backslash stays", morse.NewMetric(`a\b`, tags(`c\d`, `e\f`), fields(`g\h`, `i\j`), ts),
			`a\b,c\d=e\f g\h="i\\j" 1700000000123456789` + "\n"},
		{"backslash before an escaped comma", morse.NewMetric("m", tags(`a\,b`, "v"), fields("v", 1.0), ts),
			`m,a\\,b=v v=1 1700000000123456789` + "\n"},
		{"keys equal once trimmed: the first is kept", morse.NewMetric("m", tags("host", "a", `host\`, "b"), fields("v", 1.0), ts),
			"m,host=a v=1 1700000000123456789\n"},
		{"field key of only backslashes is left out", morse.NewMetric("m", nil, fields(`\`, 1.0, "v", 2.0), ts),
			"m v=2 1700000000123456789\n"},
		{"measurement with leading space", morse.NewMetric(" m", nil, fields("v", 1.0), ts),
			`\ m v=1 1700000000123456789` + "\n"},
	}
	s := influx.New(influx.Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, line(t, s, tc.m))
		})
	}
}

func TestValues(t *testing.T) {
	cases := []struct {
		name  string
		v     morse.Value
		uints bool
		want  string
	}{
		{"float", morse.Float(1.5), false, "1.5"},
		{"integral float stays a float", morse.Float(42), false, "42"},
		{"negative zero", morse.Float(math.Copysign(0, -1)), false, "-0"},
		{"large float uses an exponent", morse.Float(1e21), false, "1e+21"},
		{"million", morse.Float(1e6), false, "1e+06"},
		{"small float uses an exponent", morse.Float(1.5e-7), false, "1.5e-07"},
		{"shortest round-trip digits", morse.Float(0.1), false, "0.1"},
		{"max float", morse.Float(math.MaxFloat64), false, "1.7976931348623157e+308"},
		{"smallest denormal", morse.Float(5e-324), false, "5e-324"},
		{"int", morse.Int(-42), false, "-42i"},
		{"min int", morse.Int(math.MinInt64), false, "-9223372036854775808i"},
		{"uint as int", morse.Uint(7), false, "7i"},
		{"uint above MaxInt64 is clamped", morse.Uint(math.MaxUint64), false, "9223372036854775807i"},
		{"uint with uint support", morse.Uint(7), true, "7u"},
		{"max uint with uint support", morse.Uint(math.MaxUint64), true, "18446744073709551615u"},
		{"string", morse.String("x"), false, `"x"`},
		{"empty string", morse.String(""), false, `""`},
		{"true", morse.Bool(true), false, "true"},
		{"false", morse.Bool(false), false, "false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := influx.New(influx.Options{UintSupport: tc.uints})
			m := morse.NewMetric("m", nil, []morse.Field{{Key: "f", Value: tc.v}}, time.Time{})
			require.Equal(t, "m f="+tc.want+"\n", line(t, s, m))
		})
	}
}

// TestDecimalFloats: with DecimalFloats, floats are written as Telegraf's serializer writes
// them (strconv 'f', shortest): never with an exponent.
func TestDecimalFloats(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{1.5, "1.5"},
		{42, "42"},
		{1e6, "1000000"},
		{8.5e9, "8500000000"},
		{1e21, "1000000000000000000000"},
		{1.5e-7, "0.00000015"},
		{0.1, "0.1"},
		{math.Copysign(0, -1), "-0"},
	}
	s := influx.New(influx.Options{DecimalFloats: true})
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			m := morse.NewMetric("m", nil, []morse.Field{{Key: "f", Value: morse.Float(tc.v)}}, time.Time{})
			require.Equal(t, "m f="+tc.want+"\n", line(t, s, m))
		})
	}
}

func TestPrecision(t *testing.T) {
	cases := []struct {
		prec time.Duration
		t    time.Time
		want string
	}{
		{0, ts, " 1700000000123456789"},
		{time.Nanosecond, ts, " 1700000000123456789"},
		{time.Microsecond, ts, " 1700000000123456"},
		{time.Millisecond, ts, " 1700000000123"},
		{time.Second, ts, " 1700000000"},
		{time.Second, time.Unix(0, 0), " 0"},
		{time.Second, time.Unix(-1, -500_000_000), " -1"}, // truncated toward zero
		{time.Second, time.Time{}, ""},                    // no timestamp: the server assigns one
		{time.Nanosecond, time.Time{}, ""},
	}
	for _, tc := range cases {
		s := influx.New(influx.Options{Precision: tc.prec})
		m := morse.NewMetric("m", nil, fields("v", 1.0), tc.t)
		require.Equal(t, "m v=1"+tc.want+"\n", line(t, s, m), "precision %v time %v", tc.prec, tc.t)
	}
}

func TestNonFiniteFloatsAreSkippedAndCounted(t *testing.T) {
	var c selfstat.Counter
	s := influx.New(influx.Options{SkippedFields: &c})
	m := morse.NewMetric("m", nil, fields("a", math.NaN(), "b", 1.0, "c", math.Inf(1), "d", math.Inf(-1)), ts)
	require.Equal(t, "m b=1 1700000000123456789\n", line(t, s, m))
	require.EqualValues(t, 3, s.SkippedFields())
	require.EqualValues(t, 3, c.Get())
}

func requireSerializeError(t *testing.T, err error, target error) {
	t.Helper()
	require.ErrorIs(t, err, target)
	var pe *morse.PermanentError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, morse.ReasonSerialize, pe.Reason)
	require.Equal(t, morse.OutcomeDropped, morse.Classify(err))
}

func TestUnwritableMetrics(t *testing.T) {
	cases := []struct {
		name    string
		m       morse.Metric
		err     error
		skipped int64
	}{
		{"all fields NaN", morse.NewMetric("m", tags("a", "b"), fields("x", math.NaN(), "y", math.Inf(1)), ts), influx.ErrNoFields, 2},
		{"no fields", morse.NewMetric("m", nil, nil, ts), influx.ErrNoFields, 0},
		{"zero Value", morse.NewMetric("m", nil, []morse.Field{{Key: "x"}}, ts), influx.ErrNoFields, 1},
		{"empty name", morse.NewMetric("", nil, fields("v", 1.0), ts), influx.ErrEmptyName, 0},
		{"name of backslashes", morse.NewMetric(`\\`, nil, fields("v", 1.0), ts), influx.ErrEmptyName, 0},
		{"name starting with #", morse.NewMetric("#m", nil, fields("v", 1.0), ts), influx.ErrCommentName, 0},
		{"time before 1677", morse.NewMetric("m", nil, fields("v", 1.0), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)), influx.ErrTimeRange, 0},
		{"time after 2262", morse.NewMetric("m", nil, fields("v", 1.0), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)), influx.ErrTimeRange, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := influx.New(influx.Options{})
			dst := []byte("previous line\n")
			out, err := s.AppendMetric(dst, tc.m)
			requireSerializeError(t, err, tc.err)
			require.Equal(t, "previous line\n", string(out), "dst must be left unchanged")
			require.Equal(t, tc.skipped, s.SkippedFields())
		})
	}
}

func TestTimeRangeEdges(t *testing.T) {
	s := influx.New(influx.Options{})
	lo := morse.NewMetric("m", nil, fields("v", 1.0), time.Unix(0, math.MinInt64+2))
	hi := morse.NewMetric("m", nil, fields("v", 1.0), time.Unix(0, math.MaxInt64-1))
	require.Equal(t, "m v=1 -9223372036854775806\n", line(t, s, lo))
	require.Equal(t, "m v=1 9223372036854775806\n", line(t, s, hi))
	_, err := s.AppendMetric(nil, hi.WithTime(time.Unix(0, math.MaxInt64)))
	require.ErrorIs(t, err, influx.ErrTimeRange)
}

func TestMaxLineBytes(t *testing.T) {
	m := morse.NewMetric("cpu", tags("host", "a"), fields("aa", 1.0, "bb", 2.0, "cc", 3.0, "toolongforanyline", "xxxxxxxxxxxxxxxxxxxxxxxx", "dd", 4.0), time.Unix(0, 5))
	cases := []struct {
		max     int
		want    string
		skipped int64
	}{
		{0, "cpu,host=a aa=1,bb=2,cc=3,toolongforanyline=\"xxxxxxxxxxxxxxxxxxxxxxxx\",dd=4 5\n", 0},
		// "cpu,host=a aa=1,bb=2 5\n" is 23 bytes: two short fields per line.
		{23, "cpu,host=a aa=1,bb=2 5\ncpu,host=a cc=3,dd=4 5\n", 1},
		{22, "cpu,host=a aa=1 5\ncpu,host=a bb=2 5\ncpu,host=a cc=3 5\ncpu,host=a dd=4 5\n", 1},
		{1000, "cpu,host=a aa=1,bb=2,cc=3,toolongforanyline=\"xxxxxxxxxxxxxxxxxxxxxxxx\",dd=4 5\n", 0},
	}
	for _, tc := range cases {
		s := influx.New(influx.Options{MaxLineBytes: tc.max})
		got := line(t, s, m)
		require.Equal(t, tc.want, got, "max %d", tc.max)
		require.Equal(t, tc.skipped, s.SkippedFields(), "max %d", tc.max)
	}

	s := influx.New(influx.Options{MaxLineBytes: 10})
	_, err := s.AppendMetric(nil, m)
	requireSerializeError(t, err, influx.ErrNoFields)
	require.EqualValues(t, 5, s.SkippedFields())
}

func TestAppendBatch(t *testing.T) {
	s := influx.New(influx.Options{})
	batch := []morse.Metric{
		morse.NewMetric("a", nil, fields("v", 1.0), time.Unix(0, 1)),
		morse.NewMetric("b", nil, fields("v", math.NaN()), time.Unix(0, 2)),
		morse.NewMetric("", nil, fields("v", 1.0), time.Unix(0, 3)),
		morse.NewMetric("c", nil, fields("v", 3.0), time.Unix(0, 4)),
	}
	out, dropped := s.AppendBatch([]byte("# head\n"), batch)
	require.Equal(t, "# head\na v=1 1\nc v=3 4\n", string(out))
	require.Equal(t, 2, dropped)
	require.EqualValues(t, 1, s.SkippedFields())
}

func TestAppendMetricDoesNotAllocate(t *testing.T) {
	s := influx.New(influx.Options{MaxLineBytes: 130})
	m := benchMetric()
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		buf, err = s.AppendMetric(buf[:0], m)
		if err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
	// Escaping, U+FFFD replacement and a NaN field take the byte-by-byte paths.
	odd := morse.NewMetric("a b\x00", tags("k=1", "v\xff", "t\n", "x"), fields("f,1", "q\"\\\xff", "n", math.NaN(), "u", uint64(math.MaxUint64)), ts)
	allocs = testing.AllocsPerRun(1000, func() { buf, _ = s.AppendMetric(buf[:0], odd) })
	require.Zero(t, allocs)
}

// TestConcurrentUse shares one Serializer between goroutines, as outputs may.
func TestConcurrentUse(t *testing.T) {
	s := influx.New(influx.Options{})
	m := morse.NewMetric("m", tags("k", "v"), fields("a", math.NaN(), "b", 2.0), ts)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for range each {
				var err error
				if buf, err = s.AppendMetric(buf[:0], m); err != nil {
					errs <- err
					return
				}
				if string(buf) != "m,k=v b=2 1700000000123456789\n" {
					errs <- errors.New("unexpected line " + string(buf))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, workers*each, s.SkippedFields())
}

// TestBackslashEscapes: for a reader that takes every backslash as an escape (QuestDB), a
// backslash is doubled and kept at the end, and tab and line breaks are escaped raw; commas,
// spaces and equals signs as always; line metrics go as they are.
func TestBackslashEscapes(t *testing.T) {
	s := influx.New(influx.Options{BackslashEscapes: true})
	tm := time.Unix(1, 0)
	tests := []struct {
		name string
		m    morse.Metric
		want string
	}{
		{"backslashes", morse.NewMetric("m", []morse.Tag{{Key: "p", Value: `C:\Temp\`}}, []morse.Field{{Key: "v", Value: morse.Int(1)}}, tm),
			`m,p=C:\\Temp\\ v=1i 1000000000` + "\n"},
		{"whitespace", morse.NewMetric("m", []morse.Tag{{Key: "p", Value: "a\tb\nc\rd\fe"}}, []morse.Field{{Key: "v", Value: morse.Int(1)}}, tm),
			"m,p=a\\\tb\\\nc\\\rd\\\fe v=1i 1000000000\n"},
		{"separators", morse.NewMetric("m", []morse.Tag{{Key: "p", Value: "x,y z=w"}}, []morse.Field{{Key: "v", Value: morse.Int(1)}}, tm),
			`m,p=x\,y\ z\=w v=1i 1000000000` + "\n"},
		{"a line metric as it is", morse.NewLineMetric(morse.LineText{Text: `m,p=x\,y v=1i`}, tm),
			`m,p=x\,y v=1i 1000000000` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.AppendMetric(nil, tt.m)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}
