package graphite_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	parser "github.com/morse-agent/morse/plugins/parsers/graphite"
	"github.com/morse-agent/morse/plugins/serializers/graphite"
)

// TestRoundTrip writes random metrics with the serializer and reads them back with the
// parser, for the template pairs that invert each other, and for tag support read with
// the parser's Graphite tags: each field comes back as a float field of its own metric,
// with the measurement, the tags and the time in seconds. Names and tag values are drawn
// from what both sides keep (letters, digits, '-'), as a template cannot carry a dot in a
// part and sanitizing rewrites the rest.
func TestRoundTrip(t *testing.T) {
	pairs := []struct {
		name      string
		ser       graphite.Options
		templates []string
	}{
		{"measurement.host.field", graphite.Options{Template: "measurement.host.field"}, []string{"measurement.host.field"}},
		{"prefix", graphite.Options{Prefix: "pre", Template: "host.measurement.field"}, []string{"pre.* .host.measurement.field"}},
		{"tag support", graphite.Options{TagSupport: true}, []string{"measurement.field"}},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, pc := range pairs {
		t.Run(pc.name, func(t *testing.T) {
			s, err := graphite.New(pc.ser)
			require.NoError(t, err)
			p, err := parser.New(parser.Options{Templates: pc.templates}, parsers.Settings{})
			require.NoError(t, err)
			for range 300 {
				m := randomMetric(rng, pc.ser.TagSupport)
				out, err := s.AppendMetric(nil, m)
				require.NoError(t, err)
				var got []morse.Metric
				require.NoError(t, p.Parse(out, func(m morse.Metric) { got = append(got, m) }))
				require.Len(t, got, len(m.Fields()), "%s", out)
				for i, f := range m.Fields() {
					g := got[i]
					require.Equal(t, m.Name(), g.Name(), "%s", out)
					require.Equal(t, m.Tags(), g.Tags(), "%s", out)
					require.Equal(t, m.Time().Unix(), g.Time().Unix())
					require.Equal(t, f.Key, g.Fields()[0].Key)
					require.Equal(t, asFloat(f.Value), g.Fields()[0].Value.Float())
				}
			}
		})
	}
}

func asFloat(v morse.Value) float64 {
	switch v.Type() {
	case morse.TypeInt:
		return float64(v.Int())
	case morse.TypeUint:
		return float64(v.Uint())
	case morse.TypeBool:
		if v.Bool() {
			return 1
		}
		return 0
	}
	return v.Float()
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"

func word(rng *rand.Rand) string {
	b := make([]byte, 1+rng.IntN(8))
	b[0] = alphabet[rng.IntN(52)]
	for i := 1; i < len(b); i++ {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func randomMetric(rng *rand.Rand, manyTags bool) morse.Metric {
	tags := []morse.Tag{{Key: "host", Value: word(rng)}}
	if manyTags {
		for range rng.IntN(3) {
			tags = append(tags, morse.Tag{Key: "t" + word(rng), Value: word(rng)})
		}
	}
	var fields []morse.Field
	for i := range 1 + rng.IntN(4) {
		key := fmt.Sprintf("f%d%s", i, word(rng))
		var v morse.Value
		switch rng.IntN(4) {
		case 0:
			v = morse.Int(rng.Int64N(1<<53) - 1<<52)
		case 1:
			v = morse.Uint(rng.Uint64N(1 << 53))
		case 2:
			v = morse.Bool(rng.IntN(2) == 0)
		default:
			v = morse.Float(rng.NormFloat64() * 1e6)
		}
		fields = append(fields, morse.Field{Key: key, Value: v})
	}
	return morse.NewMetric(word(rng), tags, fields, time.Unix(1600000000+rng.Int64N(1e8), rng.Int64N(1e9)))
}
