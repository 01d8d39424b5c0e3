package testutil

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Point is a metric in a form that compares with require.Equal and prints readably.
type Point struct {
	Name   string
	Tags   []morse.Tag
	Fields []morse.Field
	Time   int64 // Unix nanoseconds
}

// ToPoint converts m. No tags or fields are nil, whether the slice was nil or empty.
func ToPoint(m morse.Metric) Point {
	p := Point{Name: m.Name(), Tags: m.Tags(), Fields: m.Fields(), Time: m.Time().UnixNano()}
	if len(p.Tags) == 0 {
		p.Tags = nil
	}
	if len(p.Fields) == 0 {
		p.Fields = nil
	}
	return p
}

// ToPoints converts ms.
func ToPoints(ms []morse.Metric) []Point {
	out := make([]Point, len(ms))
	for i, m := range ms {
		out[i] = ToPoint(m)
	}
	return out
}

// ViaJSON is m as morse's JSON parser gives it back from what morse's JSON serializer wrote:
// fields in key order, and an unsigned integer that fits an int64 read as a signed one,
// JSON having one number type.
func ViaJSON(m morse.Metric) Point {
	p := ToPoint(m)
	fields := slices.Clone(p.Fields)
	slices.SortStableFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	for i, f := range fields {
		if f.Value.Type() == morse.TypeUint && f.Value.Uint() <= math.MaxInt64 {
			fields[i].Value = morse.Int(int64(f.Value.Uint()))
		}
	}
	p.Fields = fields
	return p
}

// AllTypesMetric has a field of every type at its extremes and at ordinary values, for
// round trips through a data format: integral floats, -0, the largest and smallest
// magnitudes, the integer limits, empty and non-ASCII strings, both booleans.
func AllTypesMetric(t time.Time) morse.Metric {
	return morse.NewMetric("all_types",
		[]morse.Tag{{Key: "host", Value: "web-01"}, {Key: "city", Value: "Zürich 東京"}, {Key: "quote", Value: `a "b" \c`}},
		[]morse.Field{
			{Key: "f_pi", Value: morse.Float(math.Pi)},
			{Key: "f_one", Value: morse.Float(1)},
			{Key: "f_neg_zero", Value: morse.Float(math.Copysign(0, -1))},
			{Key: "f_max", Value: morse.Float(math.MaxFloat64)},
			{Key: "f_tiny", Value: morse.Float(math.SmallestNonzeroFloat64)},
			{Key: "f_big_integral", Value: morse.Float(1e21)},
			{Key: "i_zero", Value: morse.Int(0)},
			{Key: "i_small", Value: morse.Int(-7)},
			{Key: "i_max", Value: morse.Int(math.MaxInt64)},
			{Key: "i_min", Value: morse.Int(math.MinInt64)},
			{Key: "u_small", Value: morse.Uint(5)},
			{Key: "u_max", Value: morse.Uint(math.MaxUint64)},
			{Key: "s_empty", Value: morse.String("")},
			{Key: "s_text", Value: morse.String("line one\nline \"two\"\t<&> \u2028 🌡")},
			{Key: "b_true", Value: morse.Bool(true)},
			{Key: "b_false", Value: morse.Bool(false)},
		}, t)
}

// RandomMetric makes a metric of random tags and fields of every type, with strings that
// hold quotes, backslashes, control bytes, HTML characters and multi-byte runes. With
// invalidUTF8 the strings may also hold bytes that are not UTF-8.
func RandomMetric(rng *rand.Rand, invalidUTF8 bool) morse.Metric {
	tags := make([]morse.Tag, rng.IntN(5))
	for i := range tags {
		tags[i] = morse.Tag{Key: fmt.Sprintf("t%d_%s", i, RandomString(rng, 6, invalidUTF8)), Value: RandomString(rng, 12, invalidUTF8)}
	}
	fields := make([]morse.Field, 1+rng.IntN(6))
	for i := range fields {
		fields[i] = morse.Field{Key: fmt.Sprintf("f%d_%s", i, RandomString(rng, 6, invalidUTF8)), Value: RandomValue(rng, invalidUTF8)}
	}
	sec := rng.Int64N(4_000_000_000)
	return morse.NewMetric("m_"+RandomString(rng, 8, invalidUTF8), tags, fields, time.Unix(sec, rng.Int64N(1e9)))
}

// RandomValue makes a value of a random type, often at an edge of its range.
func RandomValue(rng *rand.Rand, invalidUTF8 bool) morse.Value {
	switch rng.IntN(5) {
	case 0:
		floats := []float64{0, 1, -1, 0.1, 1e21, 1e-7, math.MaxFloat64, -math.SmallestNonzeroFloat64, 123456789}
		if rng.IntN(2) == 0 {
			return morse.Float(floats[rng.IntN(len(floats))])
		}
		return morse.Float(math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7fe)+1)<<52))
	case 1:
		ints := []int64{0, 1, -1, 127, 128, -32, -33, math.MaxInt32 + 1, math.MaxInt64, math.MinInt64}
		if rng.IntN(2) == 0 {
			return morse.Int(ints[rng.IntN(len(ints))])
		}
		return morse.Int(int64(rng.Uint64()))
	case 2:
		uints := []uint64{0, 1, 255, 256, math.MaxUint32, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64}
		if rng.IntN(2) == 0 {
			return morse.Uint(uints[rng.IntN(len(uints))])
		}
		return morse.Uint(rng.Uint64())
	case 3:
		return morse.String(RandomString(rng, 20, invalidUTF8))
	}
	return morse.Bool(rng.IntN(2) == 0)
}

// RandomString makes a string of up to n pieces drawn from a set of awkward ones.
func RandomString(rng *rand.Rand, n int, invalidUTF8 bool) string {
	pieces := []string{"a", "Z", "0", " ", ",", "=", `"`, `\`, "\n", "\t", "\x00", "\x1f", "<", ">", "&", "é", "東", "🌡", "\u2028", "{", "}", "[", "]", ":"}
	if invalidUTF8 {
		pieces = append(pieces, "\xff", "\xc3", "\xed\xa0\x80")
	}
	var b strings.Builder
	for range 1 + rng.IntN(n) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// BenchMetric is a realistic metric for benchmarks: four tags and five fields of mixed
// types, the same as the influx serializer's benchmarks use.
func BenchMetric() morse.Metric {
	return morse.NewMetric("system_disk",
		[]morse.Tag{{Key: "host", Value: "web-01.prod.example.com"}, {Key: "region", Value: "eu-west-1"},
			{Key: "device", Value: "nvme0n1p1"}, {Key: "fstype", Value: "ext4"}},
		[]morse.Field{
			{Key: "used_percent", Value: morse.Float(73.41234567)},
			{Key: "free", Value: morse.Uint(214748364800)},
			{Key: "inodes_used", Value: morse.Int(1234567)},
			{Key: "mode", Value: morse.String("rw")},
			{Key: "healthy", Value: morse.Bool(true)},
		},
		time.Unix(1700000000, 123456789))
}

// Canon writes each metric as one comparable string: name, tags, typed fields in order and
// the time in nanoseconds, sorted. Two lists are equal exactly when the metrics are, in any
// order of arrival.
func Canon(ms []morse.Metric) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		var b strings.Builder
		b.WriteString(m.Name())
		for _, tg := range m.Tags() {
			fmt.Fprintf(&b, ",%s=%s", tg.Key, tg.Value)
		}
		for j, f := range m.Fields() {
			sep := ","
			if j == 0 {
				sep = " "
			}
			fmt.Fprintf(&b, "%s%s=%s:%s", sep, f.Key, f.Value.Type(), f.Value)
		}
		fmt.Fprintf(&b, " %d", m.Time().UnixNano())
		out[i] = b.String()
	}
	slices.Sort(out)
	return out
}

// FieldsOf returns m's fields by key, each value as its Go value (morse.Value.Interface),
// for a test that looks fields up by name.
func FieldsOf(m morse.Metric) map[string]any {
	out := map[string]any{}
	for _, f := range m.Fields() {
		out[f.Key] = f.Value.Interface()
	}
	return out
}

// TagsOf returns m's tags by key.
func TagsOf(m morse.Metric) map[string]string {
	out := map[string]string{}
	for _, t := range m.Tags() {
		out[t.Key] = t.Value
	}
	return out
}
