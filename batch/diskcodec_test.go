package batch

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// corpusMetrics parses testdata/lineprotocol/corpus.lp, as line metrics or as metrics of
// fields.
func corpusMetrics(t testing.TB, lines bool) []morse.Metric {
	t.Helper()
	data, err := os.ReadFile("../testdata/lineprotocol/corpus.lp")
	require.NoError(t, err)
	p := &influx.Parser{LineMetrics: func() bool { return lines }, Now: func() time.Time { return time.Unix(1700000000, 0) }}
	var ms []morse.Metric
	p.Parse(data, func(m morse.Metric) { ms = append(ms, m) })
	require.NotEmpty(t, ms)
	return ms
}

// oddMetrics are the metrics that line protocol cannot carry faithfully.
func oddMetrics() []morse.Metric {
	all := []morse.Field{
		{Key: "f", Value: morse.Float(-1.5)}, {Key: "nan", Value: morse.Float(math.NaN())},
		{Key: "inf", Value: morse.Float(math.Inf(-1))}, {Key: "i", Value: morse.Int(math.MinInt64)},
		{Key: "u", Value: morse.Uint(math.MaxUint64)}, {Key: "s", Value: morse.String("a \"q\"\n\\ ☀")},
		{Key: "t", Value: morse.Bool(true)}, {Key: "b", Value: morse.Bool(false)}, {Key: "", Value: morse.Int(0)},
	}
	return []morse.Metric{
		morse.NewMetric("all types", []morse.Tag{{Key: "empty", Value: ""}, {Key: "k", Value: "v,=\\"}}, all, time.Unix(5, 6)),
		morse.NewMetric("zero time", nil, all[:1], time.Time{}),
		morse.NewMetric("year 1", nil, all[:1], time.Date(1, 2, 3, 4, 5, 6, 7, time.UTC)),
		morse.NewMetric("year 9999", nil, all[:1], time.Date(9999, 1, 1, 0, 0, 0, 1, time.UTC)),
		morse.NewMetric("", nil, nil, time.Unix(0, -1)),
		morse.NewLineMetric(morse.LineText{Text: "u,h=a v=3u", Uints: true}, time.Unix(1, 2)),
	}
}

// requireSameMetrics compares what the codec promises to keep: everything but the time's
// location.
func requireSameMetrics(t *testing.T, want, got []morse.Metric) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		wl, wok := w.Line()
		gl, gok := g.Line()
		require.Equal(t, wok, gok, "metric %d held as line", i)
		require.Equal(t, wl, gl, "metric %d text", i)
		require.True(t, w.Time().Equal(g.Time()), "metric %d time %v, got %v", i, w.Time(), g.Time())
		require.Equal(t, w.Time().IsZero(), g.Time().IsZero())
		if wok {
			continue
		}
		require.Equal(t, w.Name(), g.Name(), "metric %d", i)
		require.Equal(t, w.Tags(), g.Tags(), "metric %d", i)
		require.Len(t, g.Fields(), len(w.Fields()))
		for j, f := range w.Fields() {
			gf := g.Fields()[j]
			require.Equal(t, f.Key, gf.Key)
			require.Equal(t, f.Value.Type(), gf.Value.Type(), "metric %d field %s", i, f.Key)
			if f.Value.Type() == morse.TypeFloat {
				require.Equal(t, math.Float64bits(f.Value.Float()), math.Float64bits(gf.Value.Float()))
				continue
			}
			require.Equal(t, f.Value.Interface(), gf.Value.Interface(), "metric %d field %s", i, f.Key)
		}
	}
}

func TestDiskCodecRoundTrip(t *testing.T) {
	tests := map[string][]morse.Metric{
		"corpus as lines":  corpusMetrics(t, true),
		"corpus as fields": corpusMetrics(t, false),
		"odd metrics":      oddMetrics(),
		"mixed":            append(oddMetrics(), corpusMetrics(t, true)...),
	}
	for name, ms := range tests {
		t.Run(name, func(t *testing.T) {
			payload := appendMetrics(nil, ms)
			got, err := decodeMetrics(nil, payload, 0, len(ms))
			require.NoError(t, err)
			requireSameMetrics(t, ms, got)
			for n := 1; n < len(ms); n++ {
				prefix, suffix, err := splitPayload(payload, len(ms), n)
				require.NoError(t, err)
				head, err := decodeMetrics(nil, payload[:prefix], 0, n)
				require.NoError(t, err)
				tail, err := decodeMetrics(nil, suffix, 0, len(ms)-n)
				require.NoError(t, err)
				requireSameMetrics(t, ms, append(head, tail...))
			}
			part, err := decodeMetrics(nil, payload, 2, 4)
			require.NoError(t, err)
			requireSameMetrics(t, ms[2:4], part)
		})
	}
}

func TestDiskCodecRefusesDamage(t *testing.T) {
	payload := appendMetrics(nil, oddMetrics())
	for cut := range len(payload) - 1 {
		_, err := decodeMetrics(nil, payload[:cut], 0, len(oddMetrics()))
		require.ErrorIs(t, err, errCodec, "cut at %d", cut)
	}
	bad := append([]byte{codecVersion + 1}, payload[1:]...)
	_, err := decodeMetrics(nil, bad, 0, 1)
	require.ErrorIs(t, err, errCodec)
}
