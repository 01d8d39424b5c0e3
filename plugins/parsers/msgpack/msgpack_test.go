package msgpack_test

import (
	"bytes"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	vmsgpack "github.com/vmihailenco/msgpack/v5"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/msgpack"
	serializer "github.com/morse-agent/morse/plugins/serializers/msgpack"
)

var now = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// encode writes values one after another with vmihailenco/msgpack's encoder, which writes
// small unsigned integers as fixints, as Telegraf's encoder does.
func encode(t *testing.T, values ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := vmsgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	for _, v := range values {
		require.NoError(t, enc.Encode(v))
	}
	return buf.Bytes()
}

func parse(t *testing.T, data []byte) ([]testutil.Point, error) {
	t.Helper()
	var got []testutil.Point
	n, err := (&msgpack.Parser{Now: func() time.Time { return now }}).Parse(data, func(m morse.Metric) { got = append(got, testutil.ToPoint(m)) })
	require.Len(t, got, n)
	return got, err
}

func TestParseForeignEncoder(t *testing.T) {
	ts := time.Unix(1700000000, 5)
	data := encode(t,
		map[string]any{
			"extra": []int{1, 2}, "fields": map[string]any{
				"small_uint": uint64(5), "big_uint": uint64(math.MaxUint64), "neg": int64(-100), "f32": float32(1.5),
				"bin": []byte("raw"), "nil": nil, "s": "x", "b": false,
			},
			"name": "m", "tags": map[string]string{"h": "a"}, "time": ts,
		},
		map[string]any{"name": "legacy_time", "fields": map[string]any{"v": 1.0}, "time": []int64{1, 2}},
		map[string]any{"name": "string_time", "fields": map[string]any{"v": 1.0}, "time": "2023-11-14T22:13:20Z"},
		map[string]any{"name": "no_time", "fields": map[string]any{"v": 1.0}},
	)
	got, err := parse(t, data)
	require.NoError(t, err)
	require.Len(t, got, 4)
	fields := map[string]morse.Value{}
	for _, f := range got[0].Fields {
		fields[f.Key] = f.Value
	}
	require.Equal(t, map[string]morse.Value{
		"small_uint": morse.Int(5), // a fixint: the encoding says nothing of signedness
		"big_uint":   morse.Uint(math.MaxUint64),
		"neg":        morse.Int(-100),
		"f32":        morse.Float(1.5),
		"bin":        morse.String("raw"),
		"s":          morse.String("x"),
		"b":          morse.Bool(false),
	}, fields)
	require.Equal(t, []morse.Tag{{Key: "h", Value: "a"}}, got[0].Tags)
	require.Equal(t, ts.UnixNano(), got[0].Time)
	require.Equal(t, time.Unix(1, 2).UnixNano(), got[1].Time)
	require.Equal(t, int64(1700000000e9), got[2].Time)
	require.Equal(t, now.UnixNano(), got[3].Time)
}

func TestParseErrors(t *testing.T) {
	good := map[string]any{"name": "ok", "fields": map[string]any{"v": 1}}
	for _, tc := range []struct {
		name string
		data []byte
		n    int
		err  string
	}{
		{"no name", encode(t, map[string]any{"fields": map[string]any{"v": 1}}, good), 1, "no measurement name"},
		{"no fields", encode(t, good, map[string]any{"name": "m", "fields": map[string]any{"n": nil}}), 1, `measurement "m": no fields`},
		{"tag not a string", encode(t, map[string]any{"name": "m", "tags": map[string]any{"t": 1}, "fields": map[string]any{"v": 1}}, good), 1, "a tag is not a string"},
		{"key not a string", encode(t, map[any]any{1: "x", "name": "m", "fields": map[string]any{"v": 1}}, good), 1, "a key is not a string"},
		{"field of an array", encode(t, map[string]any{"name": "m", "fields": map[string]any{"a": []int{1}, "v": 1}}, good), 2, "a field holds code 0x91"},
		{"not a map stops the parse", append(encode(t, good), 0xc1), 1, "metric map"},
		{"truncated", encode(t, good)[:10], 0, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(t, tc.data)
			require.Len(t, got, tc.n)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// FuzzParse feeds any bytes: the parser never panics, and what it emits survives a trip
// through morse's serializer and back unchanged.
func FuzzParse(f *testing.F) {
	s := serializer.New()
	seed, _ := s.AppendMetric(nil, testutil.AllTypesMetric(time.Unix(1700000000, 1)))
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		var ms []morse.Metric
		p := &msgpack.Parser{Now: func() time.Time { return now }}
		_, _ = p.Parse(data, func(m morse.Metric) { ms = append(ms, m) })
		out, dropped := s.AppendBatch(nil, ms)
		require.Zero(t, dropped)
		var again []morse.Metric
		_, err := p.Parse(out, func(m morse.Metric) { again = append(again, m) })
		require.NoError(t, err)
		require.Equal(t, testutil.ToPoints(ms), testutil.ToPoints(again))
	})
}

// TestClaimedLength feeds maps whose field claims a 2 GiB extension that is not there. The
// decoder allocates toward a claimed length before it finds the input short; a decoder that
// saw an error is not reused, so memory does not grow from message to message.
func TestClaimedLength(t *testing.T) {
	data := encode(t, map[string]any{"name": "m"})
	data = append(data[:len(data):len(data)], 0xa6)
	data = append(data, "fields"...)
	data = append(data, 0x81, 0xa1, 'v', 0xc9, 0x7f, 0xff, 0xff, 0xff, 0x01)
	data[0]++ // the map has one entry more: the fields
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 200 {
		_, err := parse(t, data)
		require.ErrorContains(t, err, "EOF")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Less(t, int64(after.HeapInuse)-int64(before.HeapInuse), int64(64<<20))
}
