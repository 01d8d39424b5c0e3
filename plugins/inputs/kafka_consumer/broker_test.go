package kafka_consumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	influxser "github.com/morse-agent/morse/plugins/serializers/influx"
	jsonser "github.com/morse-agent/morse/plugins/serializers/json"
	msgpackser "github.com/morse-agent/morse/plugins/serializers/msgpack"
	"github.com/morse-agent/morse/selfstat"
)

// TestBroker runs every test that needs a broker against one Apache Kafka, started once:
// a start costs seconds.
func TestBroker(t *testing.T) {
	srv := testserver.StartKafka(t, testserver.KafkaOptions{TLS: true, Users: []testserver.KafkaUser{{Name: "agg", Password: "s3cret"}}, Props: map[string]string{
		// Lets the tests' consumers give up on a killed member after 2 s, not 6 s.
		"group.min.session.timeout.ms": "1000",
	}})
	t.Run("formats", func(t *testing.T) { testFormats(t, srv) })
	t.Run("value format counts refused entries", func(t *testing.T) { testValueFormat(t, srv) })
	t.Run("output down holds the consumer", func(t *testing.T) { testOutputDown(t, srv) })
	t.Run("two consumers share and take over", func(t *testing.T) { testTwoConsumers(t, srv) })
	t.Run("kill -9 loses nothing", func(t *testing.T) { testKill(t, srv) })
	t.Run("SASL and TLS", func(t *testing.T) { testSecure(t, srv) })
	t.Run("topic_regexps and max_message_len", func(t *testing.T) { testRegexpsAndLongMessages(t, srv) })
}

// consumeWith runs k, a consumer set up by the test, with a tracking test accumulator until
// it has added n metrics, and returns them.
func consumeWith(t *testing.T, k *KafkaConsumer, n int) []morse.Metric {
	t.Helper()
	require.NoError(t, k.Validate())
	require.NoError(t, k.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, k.Start(context.Background(), acc))
	defer k.Stop()
	require.Eventually(t, func() bool { return len(acc.Metrics()) >= n }, time.Minute, 20*time.Millisecond)
	return acc.Metrics()
}

// testSecure: the consumer reads through the SASL_SSL listener, with SCRAM-SHA-512 and the
// broker's CA, by the options it shares with outputs.kafka.
func testSecure(t *testing.T, srv *testserver.Kafka) {
	const topic = "secure"
	srv.CreateTopic(t, topic, 2, nil)
	produceSeq(t, srv, topic, 100, 10)
	k := New()
	k.Brokers, k.Topics, k.ConsumerGroup = []string{srv.SASLTLSAddr()}, []string{topic}, "secure-group"
	k.SASLMechanism, k.SASLUsername, k.SASLPassword = "SCRAM-SHA-512", "agg", morse.Secret("s3cret")
	k.Config.CA = srv.CAFile()
	require.Len(t, consumeWith(t, k, 100), 100)
}

// allTypes is one metric with a field of every type.
func allTypes() morse.Metric {
	return morse.NewMetric("types", []morse.Tag{{Key: "host", Value: "edge-1"}}, []morse.Field{
		{Key: "f", Value: morse.Float(1.25)},
		{Key: "i", Value: morse.Int(-42)},
		{Key: "u", Value: morse.Uint(1<<63 + 5)},
		{Key: "s", Value: morse.String("a \"quoted\" text")},
		{Key: "b", Value: morse.Bool(true)},
	}, time.Unix(1_700_000_000, 123_456_789))
}

// testFormats: a metric with every type survives serializer → Kafka → the consumer's
// parser in each data format, and the message options (topic_tag, msg_headers_as_tags,
// msg_header_as_metric_name, timestamp_source) apply.
func testFormats(t *testing.T, srv *testserver.Kafka) {
	jsonS, err := jsonser.New(jsonser.Options{TimestampUnits: morse.Duration(time.Nanosecond)})
	require.NoError(t, err)
	cases := []struct {
		format string
		ser    interface {
			AppendMetric([]byte, morse.Metric) ([]byte, error)
		}
		edit func(*KafkaConsumer)
		want func(morse.Metric) morse.Metric
	}{
		{format: "influx", ser: influxser.New(influxser.Options{UintSupport: true})},
		{format: "metricjson", ser: jsonS, edit: func(k *KafkaConsumer) { k.JSONTimestampUnits = morse.Duration(time.Nanosecond) }},
		{format: "msgpack", ser: msgpackser.New(), edit: func(k *KafkaConsumer) {
			k.TopicTag, k.MsgHeadersAsTags, k.MsgHeaderAsMetricName = "topic", []string{"region"}, "name"
			k.TimestampSource = "inner"
		}, want: func(m morse.Metric) morse.Metric {
			return m.WithName("renamed").WithTag("region", "eu").WithTag("topic", "fmt-msgpack").WithTime(time.UnixMilli(1_600_000_000_000))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			topic := "fmt-" + tc.format
			msg, err := tc.ser.AppendMetric(nil, allTypes())
			require.NoError(t, err)
			srv.CreateTopic(t, topic, 1, nil)
			cl := srv.Client(t, kgo.DefaultProduceTopic(topic))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: msg, Timestamp: time.UnixMilli(1_600_000_000_000),
				Headers: []kgo.RecordHeader{{Key: "region", Value: []byte("eu")}, {Key: "name", Value: []byte("renamed")}}}).FirstErr())

			k := New()
			k.Brokers, k.Topics, k.ConsumerGroup, k.DataFormat = []string{srv.Addr()}, []string{topic}, "fmt-"+tc.format, tc.format
			if tc.edit != nil {
				tc.edit(k)
			}
			got := consumeWith(t, k, 1)[0]
			want := allTypes()
			if tc.want != nil {
				want = tc.want(want)
			}
			require.Equal(t, want.Name(), got.Name())
			require.Equal(t, want.Tags(), got.Tags())
			require.ElementsMatch(t, want.Fields(), got.Fields())
			require.True(t, want.Time().Equal(got.Time()), "time %s, want %s", got.Time(), want.Time())
		})
	}
}

// testValueFormat: messages in data_format "value" are one metric each, named
// kafka_consumer; a message whose value is not of data_type is counted in parse_errors and
// its neighbours are kept.
func testValueFormat(t *testing.T, srv *testserver.Kafka) {
	const topic = "fmt-value"
	srv.CreateTopic(t, topic, 1, nil)
	cl := srv.Client(t, kgo.DefaultProduceTopic(topic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range []string{"1.5\n", "warm", "3"} {
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())

	k := New()
	k.Brokers, k.Topics, k.ConsumerGroup = []string{srv.Addr()}, []string{topic}, "fmt-value"
	k.DataFormat, k.DataType = "value", "float"
	st := selfstat.NewPluginStats(selfstat.New(), "internal_kafka_consumer", nil)
	k.SetStats(st)
	var got []string
	for _, m := range consumeWith(t, k, 2) {
		got = append(got, testutil.Canon([]morse.Metric{m.WithTime(time.Unix(0, 0))})[0])
	}
	require.Equal(t, []string{"kafka_consumer value=float:1.5 0", "kafka_consumer value=float:3 0"}, got)
	require.Equal(t, int64(3), st.Counter("messages").Get())
	require.Equal(t, int64(1), st.Counter("parse_errors").Get())
}
