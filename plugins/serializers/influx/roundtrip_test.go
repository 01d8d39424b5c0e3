package influx_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// parseNow is the time the parser gives lines without a timestamp.
var parseNow = time.Date(2024, 1, 2, 3, 4, 5, 678901234, time.UTC)

// point is a metric in a form that compares with require.Equal and prints readably.
type point struct {
	Name   string
	Tags   []morse.Tag
	Fields []morse.Field
	Time   int64
}

func toPoint(m morse.Metric) point {
	return point{Name: m.Name(), Tags: m.Tags(), Fields: m.Fields(), Time: m.Time().UnixNano()}
}

func parse(t testing.TB, data []byte, prec time.Duration) ([]point, parser.Result) {
	t.Helper()
	p := &parser.Parser{Precision: prec, Now: func() time.Time { return parseNow }}
	var out []point
	res := p.Parse(data, func(m morse.Metric) { out = append(out, toPoint(m)) })
	return out, res
}

// canonKey is what a name or key reads back as, written here independently of the
// serializer: trailing backslashes dropped, invalid UTF-8 and control bytes replaced, and the
// whitespace controls turned into a backslash and a letter.
func canonKey(s string) string {
	s = strings.ToValidUTF8(strings.TrimRight(s, `\`), "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// expect is the point that serializing m with opts and parsing it back must give, or false
// when the serializer must refuse m.
func expect(m morse.Metric, opts influx.Options) (point, bool) {
	p := point{Name: canonKey(m.Name())}
	if p.Name == "" || p.Name[0] == '#' {
		return point{}, false
	}
	prec := int64(max(opts.Precision, 1))
	switch t := m.Time(); {
	case t.IsZero():
		p.Time = parseNow.Truncate(time.Duration(prec)).UnixNano()
	case t.Before(time.Unix(0, math.MinInt64+2)) || t.After(time.Unix(0, math.MaxInt64-1)):
		return point{}, false
	default:
		p.Time = t.UnixNano() / prec * prec
	}
	for _, tag := range m.Tags() {
		k, v := canonKey(tag.Key), canonKey(tag.Value)
		if k == "" || v == "" || slices.ContainsFunc(p.Tags, func(t morse.Tag) bool { return t.Key == k }) {
			continue
		}
		p.Tags = append(p.Tags, morse.Tag{Key: k, Value: v})
	}
	slices.SortFunc(p.Tags, func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) })
	for _, f := range m.Fields() {
		k, v := canonKey(f.Key), f.Value
		switch v.Type() {
		case morse.TypeInvalid:
			continue
		case morse.TypeFloat:
			if math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0) {
				continue
			}
		case morse.TypeString:
			v = morse.String(strings.ToValidUTF8(v.Str(), "\uFFFD"))
		case morse.TypeUint:
			if !opts.UintSupport {
				v = morse.Int(int64(min(v.Uint(), math.MaxInt64)))
			}
		}
		if k != "" {
			p.Fields = append(p.Fields, morse.Field{Key: k, Value: v})
		}
	}
	return p, len(p.Fields) > 0
}

// roundTrip serializes m, parses it back and checks the result against expect.
func roundTrip(t testing.TB, m morse.Metric, opts influx.Options) {
	t.Helper()
	s := influx.New(opts)
	line, err := s.AppendMetric(nil, m)
	want, ok := expect(m, opts)
	if !ok {
		require.Error(t, err, "the serializer must refuse %#v", m)
		require.Empty(t, line)
		return
	}
	require.NoError(t, err)
	got, res := parse(t, line, opts.Precision)
	require.Zero(t, res.Errors, "line %q: %v", line, res.Err())
	require.Equal(t, []point{want}, got, "line %q", line)
}

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		m    morse.Metric
		opts influx.Options
	}{
		{"all types", morse.NewMetric("m", tags("a", "1", "b", "2"),
			fields("f", 1.5, "i", int64(-3), "u", uint64(math.MaxUint64), "s", "x", "b", true), ts), influx.Options{UintSupport: true}},
		{"uint clamped", morse.NewMetric("m", nil, fields("u", uint64(math.MaxUint64)), ts), influx.Options{}},
		{"escapes everywhere", morse.NewMetric(`a, b=c`, tags(`k, =`, `v, =`), fields(`f, =`, `s, ="\`), ts), influx.Options{}},
		{"backslash before escaped characters", morse.NewMetric(`a\ b\,c`, tags(`k\=x`, `v\,y`), fields(`f\ z`, 1.0), ts), influx.Options{}},
		{"string with newlines", morse.NewMetric("m", nil, fields("s", "line 1\nline 2\r\n\ttabbed"), ts), influx.Options{}},
		{"string that looks escaped", morse.NewMetric("m", nil, fields("s", `\n \t \" \\`), ts), influx.Options{}},
		{"whitespace in keys", morse.NewMetric("m\n", tags("k\t", "v\r"), fields("f\f", 1.0), ts), influx.Options{}},
		{"controls and invalid UTF-8", morse.NewMetric("m\x00\xff", tags("k\x01", "v\xc3"), fields("f\x7f", "s\xff\xfe"), ts), influx.Options{}},
		{"unicode", morse.NewMetric("温度", tags("città", "Zürich"), fields("🌡", 21.5), ts), influx.Options{}},
		{"float extremes", morse.NewMetric("m", nil, fields("a", math.MaxFloat64, "b", 5e-324, "c", math.Copysign(0, -1), "d", 1e21, "e", 123456789.0), ts), influx.Options{}},
		{"int extremes", morse.NewMetric("m", nil, fields("a", int64(math.MinInt64), "b", int64(math.MaxInt64)), ts), influx.Options{}},
		{"no timestamp", morse.NewMetric("m", nil, fields("v", 1.0), time.Time{}), influx.Options{}},
		{"no timestamp in seconds", morse.NewMetric("m", nil, fields("v", 1.0), time.Time{}), influx.Options{Precision: time.Second}},
		{"microseconds", morse.NewMetric("m", nil, fields("v", 1.0), ts), influx.Options{Precision: time.Microsecond}},
		{"milliseconds", morse.NewMetric("m", nil, fields("v", 1.0), ts), influx.Options{Precision: time.Millisecond}},
		{"seconds", morse.NewMetric("m", nil, fields("v", 1.0), ts), influx.Options{Precision: time.Second}},
		{"negative time", morse.NewMetric("m", nil, fields("v", 1.0), time.Unix(-1000, -5)), influx.Options{}},
		{"earliest time", morse.NewMetric("m", nil, fields("v", 1.0), time.Unix(0, math.MinInt64+2)), influx.Options{}},
		{"latest time", morse.NewMetric("m", nil, fields("v", 1.0), time.Unix(0, math.MaxInt64-1)), influx.Options{}},
		{"duplicate field keys", morse.NewMetric("m", nil, fields("v", 1.0, "v", 2.0), ts), influx.Options{}},
		{"tags that collide once written", morse.NewMetric("m", tags("k", "1", `k\`, "2", "k\x00", "3", "k\xff", "4"), fields("v", 1.0), ts), influx.Options{}},
		{"refused: only NaN", morse.NewMetric("m", nil, fields("v", math.NaN()), ts), influx.Options{}},
		{"refused: comment name", morse.NewMetric("#m", nil, fields("v", 1.0), ts), influx.Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.m, tc.opts) })
	}
}

// randomString draws from an alphabet that is heavy in the characters line protocol treats
// specially, so that random metrics hit every escaping rule.
func randomString(r *rand.Rand, maxLen int) string {
	pieces := []string{"a", "b", "z", "0", "9", "_", ",", "=", " ", `"`, `\`, "\n", "\t", "\r", "\f", "#", "é", "東", "🌡", "\x00", "\x7f", "\xff", "\xc3", "t", "u", "i", "-", ".", "e"}
	n := r.IntN(maxLen + 1)
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomValue(r *rand.Rand) morse.Value {
	switch r.IntN(9) {
	case 0:
		return morse.Float(r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20)))
	case 1:
		return morse.Float([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64}[r.IntN(7)])
	case 2:
		return morse.Float(math.Float64frombits(r.Uint64()))
	case 3:
		return morse.Int(int64(r.Uint64()))
	case 4:
		return morse.Uint(r.Uint64())
	case 5:
		return morse.Bool(r.IntN(2) == 0)
	case 6:
		return morse.Value{}
	}
	return morse.String(randomString(r, 12))
}

func randomMetric(r *rand.Rand) morse.Metric {
	var tagList []morse.Tag
	for range r.IntN(5) {
		tagList = append(tagList, morse.Tag{Key: randomString(r, 6), Value: randomString(r, 6)})
	}
	var fieldList []morse.Field
	for range r.IntN(5) {
		fieldList = append(fieldList, morse.Field{Key: randomString(r, 6), Value: randomValue(r)})
	}
	var t time.Time
	switch r.IntN(4) {
	case 0: // no timestamp
	case 1:
		t = time.Unix(0, int64(r.Uint64())) // anywhere in InfluxDB's range, or just outside
	default:
		t = time.Unix(r.Int64N(4_000_000_000), r.Int64N(1e9))
	}
	return morse.NewMetric(randomString(r, 8), tagList, fieldList, t)
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	precisions := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second}
	for i := range 5000 {
		m := randomMetric(r)
		opts := influx.Options{Precision: precisions[i%4], UintSupport: i%3 == 0}
		roundTrip(t, m, opts)
	}
}

// TestRoundTripBatch parses one buffer of many lines, so that multi-line string values and
// line counting are checked across line boundaries too.
func TestRoundTripBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := influx.New(influx.Options{UintSupport: true})
	var (
		buf  []byte
		want []point
	)
	for range 2000 {
		m := randomMetric(r)
		var err error
		if buf, err = s.AppendMetric(buf, m); err == nil {
			p, ok := expect(m, influx.Options{UintSupport: true})
			require.True(t, ok)
			want = append(want, p)
		}
	}
	got, res := parse(t, buf, 0)
	require.Zero(t, res.Errors, "%v", res.Err())
	require.Equal(t, len(want), res.Lines)
	require.Equal(t, want, got)
}
