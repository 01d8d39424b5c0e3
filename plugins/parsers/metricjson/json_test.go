package metricjson_test

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/metricjson"
)

var now = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func parse(t testing.TB, p *metricjson.Parser, in string) ([]testutil.Point, int, error) {
	t.Helper()
	if p.Now == nil {
		p.Now = func() time.Time { return now }
	}
	var got []testutil.Point
	n, err := p.Parse([]byte(in), func(m morse.Metric) { got = append(got, testutil.ToPoint(m)) })
	require.Len(t, got, n)
	return got, n, err
}

func pt(name string, tags []morse.Tag, t int64, fields ...morse.Field) testutil.Point {
	return testutil.Point{Name: name, Tags: tags, Fields: fields, Time: t}
}

func f(k string, v morse.Value) morse.Field { return morse.Field{Key: k, Value: v} }

func TestParse(t *testing.T) {
	sec := int64(time.Second)
	for _, tc := range []struct {
		name string
		p    metricjson.Parser
		in   string
		want []testutil.Point
	}{
		{"telegraf shape", metricjson.Parser{}, `{"fields":{"a":1.5},"name":"m","tags":{"h":"x"},"timestamp":1700000000}`,
			[]testutil.Point{pt("m", []morse.Tag{{Key: "h", Value: "x"}}, 1700000000*sec, f("a", morse.Float(1.5)))}},
		{"keys in any order, others ignored, white space", metricjson.Parser{},
			"\n {\"extra\": [1, {\"x\": null}], \"timestamp\" : 2 , \"name\":\"m\",\t\"fields\":{\"a\":true} }\n",
			[]testutil.Point{pt("m", nil, 2*sec, f("a", morse.Bool(true)))}},
		{"number types by form", metricjson.Parser{}, `{"name":"m","fields":{"i":1,"f":1.0,"e":1e3,"n":-0,"neg":-5,"u":18446744073709551615,"big":18446744073709551616,"E":2E-2},"timestamp":0}`,
			[]testutil.Point{pt("m", nil, 0, f("i", morse.Int(1)), f("f", morse.Float(1)), f("e", morse.Float(1000)), f("n", morse.Int(0)),
				f("neg", morse.Int(-5)), f("u", morse.Uint(math.MaxUint64)), f("big", morse.Float(18446744073709551616)), f("E", morse.Float(0.02)))}},
		{"null left out, nested kept as JSON text", metricjson.Parser{}, `{"name":"m","fields":{"n":null,"o":{"b": [1, 2]},"a":[]},"timestamp":0}`,
			[]testutil.Point{pt("m", nil, 0, f("o", morse.String(`{"b":[1,2]}`)), f("a", morse.String(`[]`)))}},
		{"escapes", metricjson.Parser{}, `{"name":"m\u00e9\"\\\/","fields":{"s":"\ud83c\udf21 \ud800 \n\t\b\f\r"},"tags":{"k\u003c":"\u2028"},"timestamp":0}`,
			[]testutil.Point{pt("mé\"\\/", []morse.Tag{{Key: "k<", Value: "\u2028"}}, 0, f("s", morse.String("🌡 \ufffd \n\t\b\f\r")))}},
		{"several objects, a batch and an array", metricjson.Parser{},
			`{"name":"a","fields":{"v":1},"timestamp":1}{"metrics":[{"name":"b","fields":{"v":2},"timestamp":2}]}` + "\n" + `[{"name":"c","fields":{"v":3},"timestamp":3}]`,
			[]testutil.Point{pt("a", nil, sec, f("v", morse.Int(1))), pt("b", nil, 2*sec, f("v", morse.Int(2))), pt("c", nil, 3*sec, f("v", morse.Int(3)))}},
		{"units", metricjson.Parser{TimestampUnits: 15 * time.Millisecond}, `{"name":"m","fields":{"v":1},"timestamp":170000000012}`,
			[]testutil.Point{pt("m", nil, 1700000000120000000, f("v", morse.Int(1)))}},
		{"fractional seconds", metricjson.Parser{}, `{"name":"m","fields":{"v":1},"timestamp":1.5}`,
			[]testutil.Point{pt("m", nil, 1500000000, f("v", morse.Int(1)))}},
		{"RFC 3339 string", metricjson.Parser{}, `{"name":"m","fields":{"v":1},"timestamp":"2023-11-14T22:13:20.5+01:00"}`,
			[]testutil.Point{pt("m", nil, 1699996400500000000, f("v", morse.Int(1)))}},
		{"layout", metricjson.Parser{TimestampFormat: "2006-01-02 15:04:05"}, `{"name":"m","fields":{"v":1},"timestamp":"2023-11-14 22:13:20"}`,
			[]testutil.Point{pt("m", nil, 1700000000*sec, f("v", morse.Int(1)))}},
		{"no timestamp: now", metricjson.Parser{}, `{"name":"m","fields":{"v":1}}`,
			[]testutil.Point{pt("m", nil, now.UnixNano(), f("v", morse.Int(1)))}},
		{"year 1 in seconds", metricjson.Parser{}, `{"name":"m","fields":{"v":1},"timestamp":-62135596800}`,
			[]testutil.Point{pt("m", nil, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), f("v", morse.Int(1)))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parse(t, &tc.p, tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	good := `{"name":"ok","fields":{"v":1},"timestamp":0}`
	for _, tc := range []struct {
		name string
		in   string
		n    int // metrics still emitted
		err  string
	}{
		{"no name", `{"fields":{"v":1}}` + good, 1, "no measurement name"},
		{"empty name", `{"name":"","fields":{"v":1}}` + good, 1, "no measurement name"},
		{"no fields", good + `{"name":"m","fields":{"n":null}}`, 1, `measurement "m": no fields`},
		{"tag not a string", `{"name":"m","tags":{"t":1},"fields":{"v":1}}` + good, 1, `tag "t" is not a string`},
		{"name not a string", `{"name":1,"fields":{"v":1}}` + good, 1, `"name" is not a string`},
		{"number out of range", `{"name":"m","fields":{"v":1e400}}` + good, 1, "number 1e400 out of range"},
		{"bad timestamp", `{"name":"m","fields":{"v":1},"timestamp":"yesterday"}` + good, 1, "timestamp"},
		{"two bad ones", `{"fields":{"v":1}}{"name":"m"}` + good, 1, "no measurement name (and 1 more objects could not be read)"},
		{"syntax error stops the parse", good + `{"name":"m","fields":{"v":01}}` + good, 1, "json: offset"},
		{"truncated", good + `{"name":"m","fields":{"v":1`, 1, "json: offset"},
		{"not an object", `"text"[1,` + good + `]`, 1, "not a JSON object (and 1 more objects could not be read)"},
		{"control byte in a string", "{\"name\":\"a\x01\",\"fields\":{\"v\":1}}", 0, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := parse(t, &metricjson.Parser{}, tc.in)
			require.Equal(t, tc.n, n)
			require.ErrorContains(t, err, tc.err)
		})
	}
	var se *metricjson.SyntaxError
	_, _, err := parse(t, &metricjson.Parser{}, `{"name":"m",}`)
	require.True(t, errors.As(err, &se))
	require.Equal(t, 12, se.Offset)
}

// FuzzParse holds the scanner to encoding/json: input the parser reads without a syntax
// error is a sequence of valid JSON documents, and a valid document never gets one.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"fields":{"a":1.5,"b":"x","c":true},"name":"m","tags":{"h":"x"},"timestamp":1700000000}`,
		`{"metrics":[{"name":"b","fields":{"v":2},"timestamp":2}]}`, `[{"name":"c","fields":{"v":-3e2}}]`,
		`{"name":"m\ud83c\udf21","fields":{"o":{"x":[null,false]}}}`, `{"name":"m","fields":{"v":01}}`, `{"a":"\u12"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := (&metricjson.Parser{Now: func() time.Time { return now }}).Parse(data, func(morse.Metric) {})
		var se *metricjson.SyntaxError
		syntaxErr := errors.As(err, &se)
		if !syntaxErr {
			dec := stdjson.NewDecoder(bytes.NewReader(data))
			dec.UseNumber() // syntax only: a number beyond float64 is still JSON
			for {
				var v any
				err := dec.Decode(&v)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err, "parsed without a syntax error but encoding/json refuses it")
			}
		}
		if stdjson.Valid(data) {
			require.False(t, syntaxErr, "valid JSON got a syntax error: %v", err)
		}
	})
}
