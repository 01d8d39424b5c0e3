package roundtrip_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/csv"
	"github.com/morse-agent/morse/plugins/serializers/csv"
)

// csvMetric is a metric of the one shape a CSV file with one header holds: the tags host
// and region and a field of each type csv_column_types can declare. A string may be empty,
// which the reader is told to skip (csv_skip_values = [""]): an empty column is no field.
func csvMetric(rng *rand.Rand) morse.Metric {
	str := testutil.RandomString(rng, 12, false)
	if rng.IntN(8) == 0 {
		str = ""
	}
	return morse.NewMetric("m_"+testutil.RandomString(rng, 8, false),
		[]morse.Tag{{Key: "host", Value: testutil.RandomString(rng, 8, false)}, {Key: "region", Value: testutil.RandomString(rng, 8, false)}},
		[]morse.Field{
			{Key: "f_bool", Value: morse.Bool(rng.IntN(2) == 0)},
			{Key: "f_float", Value: morse.Float(finiteFloat(rng))},
			{Key: "f_int", Value: morse.Int(int64(rng.Uint64()))},
			{Key: "f_str", Value: morse.String(str)},
		}, someTime(rng))
}

// csvExpect is m as the reader gives it back: an empty string is no field, and the time
// keeps what the timestamp format holds.
func csvExpect(m morse.Metric, precision time.Duration) testutil.Point {
	p := normalized(m)
	p.Fields = nil
	for _, f := range sortedFields(m.Fields()) {
		if f.Value.Type() == morse.TypeString && f.Value.Str() == "" {
			continue
		}
		p.Fields = append(p.Fields, f)
	}
	p.Time = m.Time().Truncate(precision).UnixNano()
	return p
}

// TestCSV writes batches of random metrics with a header and reads them back with the csv
// parser configured for that header, for each timestamp format the two share and for
// another separator. What CSV cannot hold, and this test therefore does not draw: a second
// shape after the header (the header is the first metric's), types the reader is not told
// (csv_column_types; inferred, 1.0 is written 1 and read as an int), unsigned integers (no
// csv_column_types type: "int" reads those up to 2^63-1), empty strings and missing fields
// (an empty column is no field, with csv_skip_values = [""]; without it, an error for a
// typed column), empty tag values, and CR LF inside a string (encoding/csv reads "\n").
func TestCSV(t *testing.T) {
	cases := []struct {
		name      string
		format    string // csv_timestamp_format of both sides
		separator string
		precision time.Duration
	}{
		{"unix_ns", "unix_ns", "", time.Nanosecond},
		{"unix_ms", "unix_ms", "", time.Millisecond},
		{"unix", "unix", "", time.Second},
		{"layout", "2006-01-02T15:04:05.999999999Z07:00", "", time.Nanosecond},
		{"semicolon", "unix_us", ";", time.Microsecond},
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := csv.New(csv.Options{Header: true, TimestampFormat: tc.format, Separator: tc.separator})
			require.NoError(t, err)
			p, err := parser.New(parser.Options{
				HeaderRowCount:    1,
				Delimiter:         tc.separator,
				MeasurementColumn: "measurement",
				TimestampColumn:   "timestamp",
				TimestampFormat:   tc.format,
				TagColumns:        []string{"host", "region"},
				ColumnTypes:       []string{"string", "string", "string", "string", "bool", "float", "int", "string"},
				SkipValues:        []string{""},
			}, settings)
			require.NoError(t, err)
			var buf []byte
			var want []testutil.Point
			for range 400 {
				m := csvMetric(rng)
				buf, err = s.AppendBatch(buf, []morse.Metric{m})
				require.NoError(t, err)
				want = append(want, csvExpect(m, tc.precision))
			}
			got := parseAll(t, p, buf)
			require.Len(t, got, len(want))
			for i := range got {
				require.Equal(t, want[i], normalized(got[i]), "row %d", i)
			}
		})
	}
}
