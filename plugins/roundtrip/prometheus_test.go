package roundtrip_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/prometheus"
	"github.com/morse-agent/morse/plugins/serializers/prometheus"
)

// promName draws a name that Prometheus' legacy rules keep as it is: a letter or _, then
// letters, digits and _, never starting with the reserved "__".
func promName(rng *rand.Rand) string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	const rest = first + "0123456789_"
	b := []byte{first[rng.IntN(len(first))]}
	for range rng.IntN(10) {
		b = append(b, rest[rng.IntN(len(rest))])
	}
	return string(b)
}

// promMetric draws a metric whose names survive sanitizing: the measurement "prometheus"
// (its fields are the family names) or another name, labels with any UTF-8 value, and
// fields of every type, a string among them now and then. No label is "le" or "quantile",
// which would make the batch's families histograms and summaries.
func promMetric(rng *rand.Rand, id int) morse.Metric {
	name := "prometheus"
	if rng.IntN(2) == 0 {
		name = promName(rng)
	}
	tags := []morse.Tag{{Key: "id", Value: strconv.Itoa(id)}}
	for i := range rng.IntN(4) {
		tags = append(tags, morse.Tag{Key: fmt.Sprintf("l%d_%s", i, promName(rng)), Value: testutil.RandomString(rng, 12, false)})
	}
	var fields []morse.Field
	for i := range 1 + rng.IntN(4) {
		key := fmt.Sprintf("f%d_%s", i, promName(rng))
		var v morse.Value
		switch rng.IntN(6) {
		case 0:
			v = morse.Int(int64(rng.Uint64()))
		case 1:
			v = morse.Uint(rng.Uint64())
		case 2:
			v = morse.Bool(rng.IntN(2) == 0)
		case 3:
			v = morse.Float([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.IntN(3)])
		case 4:
			v = morse.String(testutil.RandomString(rng, 8, false))
		default:
			v = morse.Float(finiteFloat(rng))
		}
		fields = append(fields, morse.Field{Key: key, Value: v})
	}
	if fields[0].Value.Type() == morse.TypeString {
		fields[0].Value = morse.Float(finiteFloat(rng)) // at least one sample
	}
	return morse.NewMetric(name, tags, fields, someTime(rng))
}

// promExpect is m as metric_version 2 reads it back: a metric "prometheus" per field that is
// no string and no NaN (which the parser skips, as Telegraf's does), named <measurement>_<field> (the field alone for "prometheus"), holding the
// value as a float, at the time in milliseconds.
func promExpect(m morse.Metric) []morse.Metric {
	var out []morse.Metric
	for _, f := range m.Fields() {
		if f.Value.Type() == morse.TypeString || f.Value.Type() == morse.TypeFloat && math.IsNaN(f.Value.Float()) {
			continue
		}
		key := f.Key
		if m.Name() != "prometheus" {
			key = m.Name() + "_" + f.Key
		}
		out = append(out, morse.NewMetric("prometheus", sortedTags(m.Tags()),
			[]morse.Field{{Key: key, Value: morse.Float(asFloat(f.Value))}}, m.Time().Truncate(1e6)))
	}
	return out
}

// TestPrometheus writes random metrics with the prometheus serializer (metric_version 2
// naming, prometheus_export_timestamp) and reads them back with the prometheus parser at
// prometheus_metric_version 2, one metric at a time and in batches, sorted and not. What
// the text format cannot hold: string fields (left out, unless prometheus_string_as_label,
// which makes them labels), types (every value is a float64: integers beyond 2^53 are
// rounded, booleans are 1 and 0), the measurement apart from the field (joined into the
// family name by "_"), names outside [a-zA-Z_:][a-zA-Z0-9_:]* (sanitized), time below the
// millisecond, NaN (written, and skipped by the parser as by Telegraf's), empty label
// values (no label), and two samples of one family with the same labels (one is kept).
func TestPrometheus(t *testing.T) {
	p, err := parser.New(parser.Options{MetricVersion: 2}, settings)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(13, 14))
	t.Run("one metric", func(t *testing.T) {
		s, err := prometheus.New(prometheus.Options{ExportTimestamp: true})
		require.NoError(t, err)
		for i := range 1000 {
			m := promMetric(rng, i)
			out, err := s.AppendMetric(nil, m)
			require.NoError(t, err)
			require.Equal(t, testutil.Canon(promExpect(m)), testutil.Canon(parseAll(t, p, out)), "%s", out)
		}
	})
	for _, sorted := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch sorted=%v", sorted), func(t *testing.T) {
			s, err := prometheus.New(prometheus.Options{ExportTimestamp: true, SortMetrics: sorted})
			require.NoError(t, err)
			var batch, want []morse.Metric
			for i := range 1000 {
				m := promMetric(rng, i)
				batch = append(batch, m)
				want = append(want, promExpect(m)...)
			}
			out, err := s.AppendBatch(nil, batch)
			require.NoError(t, err)
			require.Equal(t, testutil.Canon(want), testutil.Canon(parseAll(t, p, out)))
		})
	}
}
