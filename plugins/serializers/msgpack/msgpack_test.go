package msgpack_test

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	vmsgpack "github.com/vmihailenco/msgpack/v5"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/msgpack"
	"github.com/morse-agent/morse/plugins/serializers/msgpack"
)

const goldenPath = "testdata/msgpack.golden"

var t0 = time.Unix(1700000000, 123456789)

func goldenMetrics() []morse.Metric {
	return []morse.Metric{
		testutil.AllTypesMetric(t0),
		morse.NewMetric("special", []morse.Tag{{Key: "bytes", Value: "\xff\x00"}}, []morse.Field{
			{Key: "nan", Value: morse.Float(math.NaN())}, {Key: "inf", Value: morse.Float(math.Inf(-1))},
			{Key: "long", Value: morse.String(string(make([]byte, 40)))},
		}, time.Unix(1700000000, 0)),
		morse.NewMetric("old", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}}, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
		morse.NewMetric("invalid", nil, []morse.Field{{Key: "v", Value: morse.Value{}}}, t0),
	}
}

// TestGolden writes each golden metric as hex, one per line, so that a change to the bytes
// shows up as a reviewable diff.
func TestGolden(t *testing.T) {
	s := msgpack.New()
	var out []byte
	for _, m := range goldenMetrics() {
		b, err := s.AppendMetric(nil, m)
		if err != nil {
			out = fmt.Appendf(out, "# %s: error: %v (permanent: %v)\n", m.Name(), err, morse.Classify(err) == morse.OutcomeDropped)
			continue
		}
		out = fmt.Appendf(out, "# %s\n%s\n", m.Name(), hex.EncodeToString(b))
	}
	testutil.Golden(t, goldenPath, out)
}

// TestTelegrafShape decodes the output with vmihailenco/msgpack's generic decoder: it is
// Telegraf's map of name, time, tags and fields, and every integer's encoding carries its
// signedness.
func TestTelegrafShape(t *testing.T) {
	b, err := msgpack.New().AppendMetric(nil, testutil.AllTypesMetric(t0))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, vmsgpack.Unmarshal(b, &got))
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	require.Equal(t, []string{"fields", "name", "tags", "time"}, keys)
	require.Equal(t, "all_types", got["name"])
	require.True(t, t0.Equal(got["time"].(time.Time)))
	require.Equal(t, map[string]any{"city": "Zürich 東京", "host": "web-01", "quote": `a "b" \c`}, got["tags"])
	fields := got["fields"].(map[string]any)
	require.Equal(t, int8(0), fields["i_zero"])
	require.Equal(t, int8(-7), fields["i_small"])
	require.Equal(t, int64(math.MaxInt64), fields["i_max"])
	require.Equal(t, uint8(5), fields["u_small"], "an unsigned integer keeps an unsigned encoding even when small")
	require.Equal(t, uint64(math.MaxUint64), fields["u_max"])
	require.Equal(t, float64(1), fields["f_one"])
	require.Equal(t, true, fields["b_true"])
	require.Equal(t, "", fields["s_empty"])
}

func TestEncodings(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"int 0", msgpack.AppendInt(nil, 0), "00"},
		{"int 127", msgpack.AppendInt(nil, 127), "7f"},
		{"int 128", msgpack.AppendInt(nil, 128), "d10080"},
		{"int -32", msgpack.AppendInt(nil, -32), "e0"},
		{"int -33", msgpack.AppendInt(nil, -33), "d0df"},
		{"int -129", msgpack.AppendInt(nil, -129), "d1ff7f"},
		{"int 1<<31", msgpack.AppendInt(nil, 1<<31), "d30000000080000000"},
		{"int min", msgpack.AppendInt(nil, math.MinInt64), "d38000000000000000"},
		{"uint 0", msgpack.AppendUint(nil, 0), "cc00"},
		{"uint 256", msgpack.AppendUint(nil, 256), "cd0100"},
		{"uint 1<<32", msgpack.AppendUint(nil, 1<<32), "cf0000000100000000"},
		// The timestamp extension: 32 bits up to 2106 for whole seconds, 64 bits with
		// nanoseconds up to 2514, 96 bits beyond and before 1970.
		{"time epoch", msgpack.AppendTime(nil, time.Unix(0, 0)), "d6ff00000000"},
		{"time 1ns", msgpack.AppendTime(nil, time.Unix(0, 1)), "d7ff0000000400000000"},
		{"time 32", msgpack.AppendTime(nil, time.Unix(0xffffffff, 0)), "d6ffffffffff"},
		{"time 64", msgpack.AppendTime(nil, time.Unix(0x3ffffffff, 999999999)), "d7ffee6b27ffffffffff"},
		{"time 96", msgpack.AppendTime(nil, time.Unix(0x400000001, 111111111)), "c70cff069f6bc70000000400000001"},
		{"time before 1970", msgpack.AppendTime(nil, time.Unix(-1, 0)), "c70cff00000000ffffffffffffffff"},
	} {
		require.Equal(t, tc.want, hex.EncodeToString(tc.got), tc.name)
	}
}

// TestRoundTrip writes random metrics, strings that are not UTF-8 included, and every type's
// extremes, and reads them back exactly: MessagePack keeps every type and every byte.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	metrics := []morse.Metric{testutil.AllTypesMetric(t0), goldenMetrics()[1], goldenMetrics()[2]}
	for range 2000 {
		metrics = append(metrics, testutil.RandomMetric(rng, true))
	}
	buf, dropped := msgpack.New().AppendBatch(nil, metrics)
	require.Zero(t, dropped)
	var got []testutil.Point
	n, err := (&parser.Parser{}).Parse(buf, func(m morse.Metric) { got = append(got, testutil.ToPoint(m)) })
	require.NoError(t, err)
	require.Equal(t, len(metrics), n)
	for i, m := range metrics {
		require.Equal(t, testutil.ToPoint(m), got[i], "metric %d", i)
	}
}

func TestZeroAllocs(t *testing.T) {
	s := msgpack.New()
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
