package roundtrip_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	jsonparser "github.com/morse-agent/morse/plugins/parsers/json"
	"github.com/morse-agent/morse/plugins/parsers/json_v2"
	"github.com/morse-agent/morse/plugins/serializers/json"
)

// viaTelegrafJSON is m as Telegraf's json parser reads what the json serializer wrote,
// configured with json_name_key = "name", json_time_key = "timestamp",
// tag_keys = ["tags_*"] and json_string_fields = ["fields_*"]: the keys carry the path of
// their object ("tags_host", "fields_used"), every number is a float, and the time is in
// microseconds.
func viaTelegrafJSON(m morse.Metric) testutil.Point {
	p := testutil.Point{Name: m.Name(), Time: m.Time().Truncate(time.Microsecond).UnixNano()}
	for _, t := range m.Tags() {
		p.Tags = append(p.Tags, morse.Tag{Key: "tags_" + t.Key, Value: t.Value})
	}
	for _, f := range m.Fields() {
		v := f.Value
		if v.Type() != morse.TypeString && v.Type() != morse.TypeBool {
			v = morse.Float(asFloat(v))
		}
		p.Fields = append(p.Fields, morse.Field{Key: "fields_" + f.Key, Value: v})
	}
	p.Tags, p.Fields = sortedTags(p.Tags), sortedFields(p.Fields)
	if len(p.Tags) == 0 {
		p.Tags = nil
	}
	return p
}

// TestJSONToTelegrafJSON writes random metrics with the json serializer, one object per
// payload and in the batch format, and reads them with the json parser (data_format "json")
// as a Telegraf user reads them. What that parser cannot hold: the types of numbers (all
// float64: integers beyond 2^53 are rounded), so also a time in nanoseconds (the output's
// json_timestamp_units = "1us" keeps it exact until the year 2255, "1ns" is rounded to
// about 256ns), and the bare tag and field keys (they come back under the prefixes "tags_"
// and "fields_" of the objects that held them).
func TestJSONToTelegrafJSON(t *testing.T) {
	s, err := json.New(json.Options{TimestampUnits: morse.Duration(time.Microsecond)})
	require.NoError(t, err)
	opts := jsonparser.Options{JSONNameKey: "name", JSONTimeKey: "timestamp", JSONTimeFormat: "unix_us",
		TagKeys: []string{"tags_*"}, JSONStringFields: []string{"fields_*"}}
	p, err := jsonparser.New(opts, settings)
	require.NoError(t, err)
	opts.JSONQuery = "metrics"
	batchParser, err := jsonparser.New(opts, settings)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(15, 16))
	var batch []morse.Metric
	for range 1000 {
		m := testutil.RandomMetric(rng, false)
		batch = append(batch, m)
		out, err := s.AppendMetric(nil, m)
		require.NoError(t, err)
		got := parseAll(t, p, out)
		require.Len(t, got, 1, "%s", out)
		require.Equal(t, viaTelegrafJSON(m), normalized(got[0]), "%s", out)
	}
	out, err := s.AppendBatch(nil, batch)
	require.NoError(t, err)
	got := parseAll(t, batchParser, out)
	require.Len(t, got, len(batch))
	for i, m := range batch {
		require.Equal(t, viaTelegrafJSON(m), normalized(got[i]), "metric %d", i)
	}
}

// TestJSONToJSONv2 writes random metrics of known tag keys with the json serializer and
// reads each payload with json_v2 configured for the serializer's shape: the name and the
// time from their paths, each tag key the user knows by its own optional path, and the
// fields object whole. What json_v2 cannot hold: the types of numbers (all float64, unless
// a field's type is named, which a user cannot do for keys not known in advance), spaces
// in field keys (an object's keys have them replaced by "_", as in Telegraf), and tags
// whose keys the configuration does not name.
func TestJSONToJSONv2(t *testing.T) {
	s, err := json.New(json.Options{TimestampUnits: morse.Duration(time.Nanosecond)})
	require.NoError(t, err)
	p, err := json_v2.New(json_v2.Options{JSONV2: []json_v2.Config{{
		MeasurementNamePath: "name",
		TimestampPath:       "timestamp",
		TimestampFormat:     "unix_ns",
		Tags: []json_v2.DataSet{
			{Path: "tags.host", Optional: true},
			{Path: "tags.region", Optional: true},
		},
		Objects: []json_v2.Object{{Path: "fields"}},
	}}}, settings)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(17, 18))
	for range 1000 {
		r := testutil.RandomMetric(rng, false)
		var tags []morse.Tag
		for _, k := range []string{"host", "region"} {
			if rng.IntN(4) > 0 {
				tags = append(tags, morse.Tag{Key: k, Value: testutil.RandomString(rng, 12, false)})
			}
		}
		m := morse.NewMetric(r.Name(), tags, r.Fields(), r.Time())
		out, err := s.AppendMetric(nil, m)
		require.NoError(t, err)
		got := parseAll(t, p, out)
		require.Len(t, got, 1, "%s", out)
		want := normalized(m)
		for i, f := range want.Fields {
			want.Fields[i].Key = strings.ReplaceAll(f.Key, " ", "_")
			if f.Value.Type() != morse.TypeString && f.Value.Type() != morse.TypeBool {
				want.Fields[i].Value = morse.Float(asFloat(f.Value))
			}
		}
		want.Fields = sortedFields(want.Fields)
		require.Equal(t, want, normalized(got[0]), "%s", out)
	}
}
