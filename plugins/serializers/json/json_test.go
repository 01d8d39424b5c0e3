package json_test

import (
	stdjson "encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/metricjson"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/json"
)

const goldenPath = "testdata/json.golden"

var t0 = time.Unix(1700000000, 123456789)

func newSerializer(t testing.TB, opts json.Options) *json.Serializer {
	t.Helper()
	s, err := json.New(opts)
	require.NoError(t, err)
	return s
}

func goldenMetrics() []morse.Metric {
	return []morse.Metric{
		testutil.AllTypesMetric(t0),
		morse.NewMetric("cpu", []morse.Tag{{Key: "host", Value: "a"}}, []morse.Field{
			{Key: "usage_user", Value: morse.Float(1.5)}, {Key: "usage_idle", Value: morse.Float(98)},
			{Key: "nan", Value: morse.Float(math.NaN())}, {Key: "inf", Value: morse.Float(math.Inf(1))},
		}, t0),
		morse.NewMetric("nested", nil, []morse.Field{
			{Key: "nested_obj", Value: morse.String(`{ "b": [1, 2.5, "x"], "a": null }`)},
			{Key: "nested_bad", Value: morse.String(`{not json`)},
			{Key: "plain", Value: morse.String(`{"a":1}`)},
		}, t0),
		morse.NewMetric("bytes", []morse.Tag{{Key: "k", Value: "\xff\x00<>"}}, []morse.Field{{Key: "v", Value: morse.String("\xc3 \x7f \u2029")}}, t0),
		morse.NewMetric("only_nan", nil, []morse.Field{{Key: "v", Value: morse.Float(math.NaN())}}, t0),
		morse.NewMetric("old", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
}

// TestGolden writes every option's output for metrics that cover each value type, escaping
// rule and error into one file, so that any change shows up as a reviewable diff.
func TestGolden(t *testing.T) {
	variants := []struct {
		name string
		opts json.Options
	}{
		{"defaults (1s)", json.Options{}},
		{"json_timestamp_units=1ns", json.Options{TimestampUnits: morse.Duration(time.Nanosecond)}},
		{"json_timestamp_units=15ms (rounds to 10ms)", json.Options{TimestampUnits: morse.Duration(15 * time.Millisecond)}},
		{"json_timestamp_format=RFC3339Nano", json.Options{TimestampFormat: time.RFC3339Nano}},
		{"json_nested_fields_include=nested_*", json.Options{NestedFieldsInclude: []string{"nested_*"}}},
	}
	var out []byte
	for _, v := range variants {
		out = fmt.Appendf(out, "# %s\n", v.name)
		s := newSerializer(t, v.opts)
		for _, m := range goldenMetrics() {
			var err error
			if out, err = s.AppendMetric(out, m); err != nil {
				out = fmt.Appendf(out, "# error: %v (permanent: %v)\n", err, morse.Classify(err) == morse.OutcomeDropped)
			}
		}
		out = fmt.Appendf(out, "# skipped_fields=%d\n", s.SkippedFields())
	}
	out = append(out, "# batch format\n"...)
	batch, err := newSerializer(t, json.Options{}).AppendBatch(nil, goldenMetrics())
	out = append(out, batch...)
	out = fmt.Appendf(out, "# dropped=%d\n", serializers.Dropped(err))
	testutil.Golden(t, goldenPath, out)

	// Every line that is not a comment is one JSON document.
	for line := range strings.Lines(string(out)) {
		if !strings.HasPrefix(line, "#") {
			require.True(t, stdjson.Valid([]byte(line)), line)
		}
	}
}

// telegrafShape builds what Telegraf's serializer marshals for m, with encoding/json doing
// the writing. Integral floats get their ".0" as a json.Number, the one place where morse
// writes differently on purpose.
func telegrafShape(m morse.Metric, units int64) map[string]any {
	tags := map[string]string{}
	for _, t := range m.Tags() {
		tags[t.Key] = t.Value
	}
	fields := map[string]any{}
	for _, f := range m.Fields() {
		v := f.Value.Interface()
		if x, ok := v.(float64); ok {
			switch {
			case math.IsNaN(x) || math.IsInf(x, 0):
				continue
			case x == math.Trunc(x) && math.Abs(x) < 1e21:
				v = stdjson.Number(strconv.FormatFloat(x, 'f', -1, 64) + ".0")
			}
		}
		fields[f.Key] = v
	}
	return map[string]any{"fields": fields, "name": m.Name(), "tags": tags, "timestamp": m.Time().UnixNano() / units}
}

// TestMatchesEncodingJSON holds the hand-written encoder to encoding/json's bytes, which are
// Telegraf's: key order, string escaping (HTML characters, control bytes, invalid UTF-8,
// U+2028) and number formatting.
func TestMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, units := range []time.Duration{time.Nanosecond, time.Second} {
		s := newSerializer(t, json.Options{TimestampUnits: morse.Duration(units)})
		for i := range 2000 {
			m := testutil.RandomMetric(rng, true)
			got, err := s.AppendMetric(nil, m)
			require.NoError(t, err)
			want, err := stdjson.Marshal(telegrafShape(m, int64(units)))
			require.NoError(t, err)
			require.Equal(t, string(want)+"\n", string(got), "metric %d: %+v", i, testutil.ToPoint(m))
		}
	}
}

func TestFloatForm(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{1, "1.0"}, {-1, "-1.0"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1.5, "1.5"},
		{123456789, "123456789.0"}, {1e20, "100000000000000000000.0"}, {1e21, "1e+21"},
		{1e-6, "0.000001"}, {1e-7, "1e-7"}, {1.5e-300, "1.5e-300"}, {math.MaxFloat64, "1.7976931348623157e+308"},
	} {
		require.Equal(t, tc.want, string(json.AppendFloat(nil, tc.f)), "%v", tc.f)
	}
}

func TestTimestampUnits(t *testing.T) {
	ts := time.Date(2023, 11, 14, 22, 13, 20, 123456789, time.UTC)
	for _, tc := range []struct {
		units time.Duration
		want  int64
	}{
		{0, 1700000000}, {time.Second, 1700000000}, {1500 * time.Millisecond, 1700000000},
		{time.Millisecond, 1700000000123}, {15 * time.Millisecond, 170000000012},
		{time.Microsecond, 1700000000123456}, {time.Nanosecond, 1700000000123456789}, {time.Minute, 170000000},
	} {
		n, ok := json.UnixIn(ts, int64(newSerializer(t, json.Options{TimestampUnits: morse.Duration(tc.units)}).Units()))
		require.True(t, ok)
		require.Equal(t, tc.want, n, "%s", tc.units)
	}
	_, ok := json.UnixIn(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), 1)
	require.False(t, ok, "year 1 in nanoseconds overflows")
	n, ok := json.UnixIn(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), int64(time.Second))
	require.True(t, ok)
	require.Equal(t, int64(-62135596800), n)
}

func TestErrors(t *testing.T) {
	s := newSerializer(t, json.Options{TimestampUnits: morse.Duration(time.Nanosecond)})
	for _, m := range []morse.Metric{
		morse.NewMetric("nan", nil, []morse.Field{{Key: "v", Value: morse.Float(math.NaN())}}, t0),
		morse.NewMetric("year1", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
	} {
		out, err := s.AppendMetric([]byte("keep"), m)
		require.Equal(t, "keep", string(out))
		require.Equal(t, morse.OutcomeDropped, morse.Classify(err), "%v", err)
	}
	_, err := json.New(json.Options{NestedFieldsExclude: []string{"["}})
	require.ErrorContains(t, err, "json_nested_fields_exclude")
}

// TestRoundTrip writes random metrics and every type's extremes and reads them back with
// morse's parser: everything survives but the documented rule for unsigned integers.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	metrics := []morse.Metric{testutil.AllTypesMetric(t0)}
	for range 2000 {
		metrics = append(metrics, testutil.RandomMetric(rng, false))
	}
	s := newSerializer(t, json.Options{TimestampUnits: morse.Duration(time.Nanosecond)})
	p := &parser.Parser{TimestampUnits: time.Nanosecond}
	for _, batch := range []bool{false, true} {
		var buf []byte
		if batch {
			var err error
			buf, err = s.AppendBatch(nil, metrics)
			require.NoError(t, err)
		} else {
			for _, m := range metrics {
				var err error
				buf, err = s.AppendMetric(buf, m)
				require.NoError(t, err)
			}
		}
		var got []testutil.Point
		n, err := p.Parse(buf, func(m morse.Metric) { got = append(got, testutil.ToPoint(m)) })
		require.NoError(t, err)
		require.Equal(t, len(metrics), n)
		for i, m := range metrics {
			require.Equal(t, testutil.ViaJSON(m), got[i], "metric %d", i)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	s := newSerializer(t, json.Options{})
	m := testutil.AllTypesMetric(t0)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = s.AppendMetric(buf[:0], m); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
