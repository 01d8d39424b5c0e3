package kafka

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestThroughBroker runs against one broker: every data format's round trip, routing by
// topic_tag and routing_tag, headers, and messages too large for a message or a topic.
func TestThroughBroker(t *testing.T) {
	t.Parallel()
	srv := startKafka(t, testserver.KafkaOptions{})
	t.Run("round trips", func(t *testing.T) { testRoundTrips(t, srv) })
	t.Run("splunkmetric from a config", func(t *testing.T) { testSplunkMetric(t, srv) })
	t.Run("routing", func(t *testing.T) { testRouting(t, srv) })
	t.Run("headers and keys", func(t *testing.T) { testHeadersAndKeys(t, srv) })
	t.Run("too large for max_message_bytes", func(t *testing.T) { testTooLargeForOutput(t, srv) })
	t.Run("too large for the topic", func(t *testing.T) { testTooLargeForTopic(t, srv) })
	t.Run("invalid topic", func(t *testing.T) { testInvalidTopic(t, srv) })
	t.Run("invalid timestamp", func(t *testing.T) { testInvalidTimestamp(t, srv) })
	t.Run("socks5", func(t *testing.T) { testSocks5(t, srv) })
}

// roundTripMetrics are every type at its extremes and random metrics. Line protocol has
// documented limits on names and keys (no control bytes, no trailing backslash), so the
// random ones are built from letters for it. Their times are in the past: Kafka refuses
// records more than an hour ahead of its clock (log.message.timestamp.after.max.ms).
func roundTripMetrics(format string) []morse.Metric {
	ms := []morse.Metric{testutil.AllTypesMetric(time.Unix(1700000000, 123456789))}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 200 {
		m := testutil.RandomMetric(rng, format == "msgpack")
		m = m.WithTime(time.Unix(1700000000+int64(i), int64(m.Time().Nanosecond())))
		if format == "influx" {
			fields := make([]morse.Field, 0, len(m.Fields()))
			for j, f := range m.Fields() {
				if f.Value.Type() == morse.TypeString {
					f.Value = morse.String(strings.ReplaceAll(f.Value.Str(), "\r", ""))
				}
				fields = append(fields, morse.Field{Key: fmt.Sprintf("f%d", j), Value: f.Value})
			}
			m = morse.NewMetric(fmt.Sprintf("m%d", i), []morse.Tag{{Key: "host", Value: fmt.Sprintf("h%d", i%7)}}, fields, m.Time())
		}
		ms = append(ms, m)
	}
	return ms
}

// expect is what a format gives back for m: see testutil.ViaJSON for JSON; the others give
// m back.
func expect(format string, m morse.Metric) testutil.Point {
	if format == "json" {
		return testutil.ViaJSON(m)
	}
	return testutil.ToPoint(m)
}

func testRoundTrips(t *testing.T, srv *testserver.Kafka) {
	for _, format := range []string{"influx", "json", "msgpack"} {
		t.Run(format, func(t *testing.T) {
			topic := "roundtrip-" + format
			k := connect(t, srv.Addr(), func(k *Kafka) {
				k.Topic, k.DataFormat, k.RoutingTag = topic, format, "host"
				switch format {
				case "influx":
					k.InfluxUintSupport = true
				case "json":
					k.JSON.TimestampUnits = morse.Duration(time.Nanosecond)
				}
			})
			ms := roundTripMetrics(format)
			require.NoError(t, write(t, k, ms))
			recs := srv.WaitRecords(t, topic, len(ms))
			require.Len(t, recs, len(ms), "one message per metric")
			got := decode(t, format, recs)
			want := make([]testutil.Point, len(ms))
			for i, m := range ms {
				want[i] = expect(format, m)
			}
			// One partition: the messages are in the order written.
			require.Equal(t, want, got)
			for i, r := range recs {
				// Kafka keeps the message time in milliseconds.
				require.Equal(t, ms[i].Time().UnixMilli(), r.Timestamp.UnixMilli(), "the message time is the metric's")
				host, _ := ms[i].Tag("host")
				require.Equal(t, host, string(r.Key), "the key is the routing tag")
			}
		})
	}
}

func testRouting(t *testing.T, srv *testserver.Kafka) {
	srv.CreateTopic(t, "route-a", 4, nil)
	srv.CreateTopic(t, "route-b", 4, nil)
	k := connect(t, srv.Addr(), func(k *Kafka) {
		k.Topic, k.TopicTag, k.ExcludeTopicTag, k.RoutingTag = "route-default", "dest", true, "host"
	})
	var ms []morse.Metric
	want := map[string]int{}
	for i := range 300 {
		tags := map[string]string{"host": fmt.Sprintf("h%d", i%10)}
		dest := [...]string{"route-a", "route-b", ""}[i%3]
		if dest != "" {
			tags["dest"] = dest
		} else {
			dest = "route-default"
		}
		want[dest]++
		ms = append(ms, metric("route", tags, map[string]any{"i": int64(i)}))
	}
	require.NoError(t, write(t, k, ms))
	for topic, n := range want {
		recs := srv.WaitRecords(t, topic, n)
		require.Len(t, recs, n, topic)
		partitionOf := map[string]int32{}
		for _, p := range decode(t, "influx", recs) {
			require.Equal(t, []morse.Tag{{Key: "host", Value: p.Tags[0].Value}}, p.Tags, "the topic tag is excluded")
		}
		for _, r := range recs {
			// A key keeps a series on one partition.
			if p, ok := partitionOf[string(r.Key)]; ok {
				require.Equal(t, p, r.Partition, "host %s", r.Key)
			}
			partitionOf[string(r.Key)] = r.Partition
		}
		require.Len(t, partitionOf, 10, topic)
	}

	t.Run("topic_suffix", func(t *testing.T) {
		k := connect(t, srv.Addr(), func(k *Kafka) {
			k.Topic, k.TopicSuffix = "suffix", TopicSuffix{Method: "tags", Keys: []string{"dc"}, Separator: "-"}
		})
		require.NoError(t, write(t, k, []morse.Metric{
			metric("m", map[string]string{"dc": "eu"}, map[string]any{"v": 1.0}),
			metric("m", nil, map[string]any{"v": 2.0}),
		}))
		require.Len(t, srv.WaitRecords(t, "suffix-eu", 1), 1)
		require.Len(t, srv.WaitRecords(t, "suffix", 1), 1)
	})
}

func testHeadersAndKeys(t *testing.T, srv *testserver.Kafka) {
	k := connect(t, srv.Addr(), func(k *Kafka) {
		k.Topic, k.RoutingKey, k.ProducerTimestamp = "headers", "random", "now"
		k.Headers = map[string]string{"name": "{{ .Name }}", "host": `host-{{ .Tag "host" }}`}
	})
	before := time.Now().Add(-time.Second)
	require.NoError(t, write(t, k, []morse.Metric{
		metric("m1", map[string]string{"host": "a"}, map[string]any{"v": 1.0}),
		metric("m2", map[string]string{"host": "b"}, map[string]any{"v": 2.0}),
	}))
	recs := srv.WaitRecords(t, "headers", 2)
	slices.SortFunc(recs, func(a, b *kgo.Record) int { return cmp.Compare(string(a.Value), string(b.Value)) })
	for i, r := range recs {
		require.Len(t, r.Key, 36, "a random UUID")
		require.Equal(t, []kgo.RecordHeader{{Key: "host", Value: []byte("host-" + "ab"[i:i+1])}, {Key: "name", Value: []byte(fmt.Sprintf("m%d", i+1))}}, r.Headers)
		require.True(t, r.Timestamp.After(before), "producer_timestamp = now")
	}
	require.NotEqual(t, recs[0].Key, recs[1].Key)
}

// testTooLargeForOutput: a metric larger than max_message_bytes is split across messages,
// and one whose single field fits no message is dropped and counted exactly.
func testTooLargeForOutput(t *testing.T, srv *testserver.Kafka) {
	k := connect(t, srv.Addr(), func(k *Kafka) { k.Topic, k.MaxMessageBytes = "large-output", 1000 })
	fields := map[string]any{}
	for i := range 10 {
		fields[fmt.Sprintf("f%d", i)] = strings.Repeat("x", 300)
	}
	err := write(t, k, []morse.Metric{
		metric("split", nil, fields),
		metric("huge", nil, map[string]any{"v": strings.Repeat("y", 2000)}),
		metric("small", nil, map[string]any{"v": 1.0}),
	})
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, []any{2, 1, ReasonMessageTooLarge}, []any{pw.Written, pw.Dropped, pw.Reason})
	got := decode(t, "influx", srv.WaitRecords(t, "large-output", 7))
	seen := map[string]int{}
	for _, p := range got {
		for _, f := range p.Fields {
			seen[p.Name+"."+f.Key]++
		}
	}
	require.Len(t, seen, 11)
	for key, n := range seen {
		require.Equal(t, 1, n, key)
	}
}

// testTooLargeForTopic: the topic's max.message.bytes is smaller than the output's limit, so
// the broker refuses whole batches; the output tries their records one at a time, stores
// the ones that fit and drops the one that does not, counted exactly.
func testTooLargeForTopic(t *testing.T, srv *testserver.Kafka) {
	limit := "1500"
	srv.CreateTopic(t, "large-topic", 1, map[string]*string{"max.message.bytes": &limit})
	k := connect(t, srv.Addr(), func(k *Kafka) { k.Topic = "large-topic" })
	var ms []morse.Metric
	for i := range 50 {
		ms = append(ms, metric("small", nil, map[string]any{"i": int64(i), "pad": strings.Repeat("p", 60)}))
	}
	ms = append(ms, metric("huge", nil, map[string]any{"v": strings.Repeat("y", 3000)}))
	err := write(t, k, ms)
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, []any{50, 1, ReasonMessageTooLarge}, []any{pw.Written, pw.Dropped, pw.Reason})
	got := decode(t, "influx", srv.WaitRecords(t, "large-topic", 50))
	require.Len(t, got, 50)
	total, _ := srv.EndOffsets(t, "large-topic")
	require.Equal(t, int64(50), total, "nothing stored twice")
}

// testInvalidTimestamp: the broker refuses a record two hours ahead of its clock, with the
// batch it is in; the output finds it by trying the batch's records one at a time.
func testInvalidTimestamp(t *testing.T, srv *testserver.Kafka) {
	k := connect(t, srv.Addr(), func(k *Kafka) { k.Topic = "future" })
	err := write(t, k, []morse.Metric{
		metric("now", nil, map[string]any{"v": 1.0}).WithTime(time.Now()),
		metric("later", nil, map[string]any{"v": 2.0}).WithTime(time.Now().Add(2 * time.Hour)),
		metric("now", nil, map[string]any{"v": 3.0}).WithTime(time.Now()),
	})
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, []any{2, 1, ReasonInvalidTimestamp}, []any{pw.Written, pw.Dropped, pw.Reason})
	require.Len(t, srv.WaitRecords(t, "future", 2), 2)
}

func testInvalidTopic(t *testing.T, srv *testserver.Kafka) {
	k := connect(t, srv.Addr(), func(k *Kafka) { k.Topic, k.TopicTag = "valid", "dest" })
	err := write(t, k, []morse.Metric{
		metric("m", map[string]string{"dest": "not valid!"}, map[string]any{"v": 1.0}),
		metric("m", nil, map[string]any{"v": 2.0}),
	})
	var pw *morse.PartialWriteError
	require.ErrorAs(t, err, &pw)
	require.Equal(t, []any{1, 1, ReasonInvalidTopic}, []any{pw.Written, pw.Dropped, pw.Reason})
	require.Len(t, srv.WaitRecords(t, "valid", 1), 1)
}
