package roundtrip_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
)

// parseNow is the time the parsers give entries without a timestamp; no round trip here
// should use it.
var parseNow = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

var settings = parsers.Settings{MetricName: "roundtrip", Now: func() time.Time { return parseNow }}

// parseAll runs p over data and returns the metrics, requiring that nothing was refused.
func parseAll(t testing.TB, p parsers.Parser, data []byte) []morse.Metric {
	t.Helper()
	var got []morse.Metric
	err := p.Parse(data, func(m morse.Metric) { got = append(got, m) })
	require.NoError(t, err, "%s", data)
	return got
}

// sortedTags returns tags in key order, as a parser that reads them from columns or labels
// need not give them.
func sortedTags(tags []morse.Tag) []morse.Tag {
	tags = slices.Clone(tags)
	slices.SortFunc(tags, func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) })
	return tags
}

// sortedFields returns fields in key order.
func sortedFields(fields []morse.Field) []morse.Field {
	fields = slices.Clone(fields)
	slices.SortStableFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	return fields
}

// normalized is a point with tags and fields in key order, for parsers whose order is not
// the metric's.
func normalized(m morse.Metric) testutil.Point {
	p := testutil.ToPoint(m)
	p.Tags = sortedTags(p.Tags)
	p.Fields = sortedFields(p.Fields)
	if len(p.Tags) == 0 {
		p.Tags = nil
	}
	return p
}

// asFloat is a number or a boolean as a float64, as the formats with one number type read it.
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

// finiteFloat draws a float64 of any finite bit pattern or a notable value.
func finiteFloat(rng *rand.Rand) float64 {
	notable := []float64{0, 1, -1, 0.1, 1e21, 1e-7, math.MaxFloat64, -math.SmallestNonzeroFloat64, 123456789, 1 << 53, 1<<53 + 1}
	if rng.IntN(2) == 0 {
		return notable[rng.IntN(len(notable))]
	}
	return math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7fe)+1)<<52)
}

// someTime is a time between 1970 and 2096 with nanoseconds.
func someTime(rng *rand.Rand) time.Time {
	return time.Unix(rng.Int64N(4_000_000_000), rng.Int64N(1e9))
}
