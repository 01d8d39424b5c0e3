package kafka

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	influxparser "github.com/morse-agent/morse/plugins/parsers/influx"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Kafka)
		key  string // the key the error names; empty: valid
	}{
		{"defaults", func(*Kafka) {}, ""},
		{"no brokers", func(k *Kafka) { k.Brokers = nil }, "brokers"},
		{"bad topic", func(k *Kafka) { k.Topic = "a b" }, "topic"},
		{"suffix method", func(k *Kafka) { k.TopicSuffix.Method = "hash" }, "topic_suffix"},
		{"codec", func(k *Kafka) { k.CompressionCodec = 5 }, "compression_codec"},
		{"acks", func(k *Kafka) { k.RequiredAcks = 2 }, "required_acks"},
		{"idempotence without all acks", func(k *Kafka) { k.IdempotentWrites, k.RequiredAcks = true, 1 }, "idempotent_writes"},
		{"max_retry", func(k *Kafka) { k.MaxRetry = -1 }, "max_retry"},
		{"max_message_bytes", func(k *Kafka) { k.MaxMessageBytes = 100 }, "max_message_bytes"},
		{"max_message_bytes 0 is the default, as in Telegraf", func(k *Kafka) { k.MaxMessageBytes = 0 }, ""},
		{"producer_timestamp", func(k *Kafka) { k.ProducerTimestamp = "later" }, "producer_timestamp"},
		{"data_format", func(k *Kafka) { k.DataFormat = "avro" }, "data_format"},
		{"json_transformation", func(k *Kafka) { k.DataFormat, k.JSON.Transformation = "json", "$$(" }, "json_transformation"},
		{"sasl mechanism", func(k *Kafka) { k.SASLMechanism = "GSSAPI" }, "sasl_mechanism"},
		{"sasl user", func(k *Kafka) { k.SASLMechanism = "SCRAM-SHA-256" }, "sasl_username"},
		{"oauth token", func(k *Kafka) { k.SASLMechanism = "OAUTHBEARER" }, "sasl_access_token"},
		{"tls pair", func(k *Kafka) { k.Cert = "c.pem" }, "tls_cert"},
		{"tls version", func(k *Kafka) { k.MinVersion = "TLS11" }, "tls_min_version"},
		{"key password", func(k *Kafka) { k.KeyPassword = "x" }, "tls_key_pwd"},
		{"socks5", func(k *Kafka) { k.Socks5Enabled = true }, "socks5_address"},
		{"retry type", func(k *Kafka) { k.MetadataRetryType = "linear" }, "metadata_retry_type"},
		{"a suffix makes any topic prefix valid", func(k *Kafka) { k.Topic, k.TopicSuffix.Method = "", "measurement" }, ""},
		{"timeout 0 would let no record wait for a broker", func(k *Kafka) { k.Timeout = 0 }, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := New()
			tc.edit(k)
			err := k.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			var fe *morse.FieldError
			require.True(t, errors.As(err, &fe), "%v", err)
			require.Equal(t, tc.key, fe.Key, "%v", err)
		})
	}
}

func TestWarnings(t *testing.T) {
	var logs bytes.Buffer
	k := New()
	k.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	k.Version, k.MetricNameHeader = "2.8.0", "metric"
	require.NoError(t, k.Validate())
	require.NoError(t, k.Init())
	for _, want := range []string{"version is not needed", "metric_name_header is deprecated"} {
		require.Contains(t, logs.String(), want)
	}
	require.Len(t, k.headerTmpl, 1)
}

func newTestOutput(t *testing.T, edit func(*Kafka)) *Kafka {
	t.Helper()
	k := New()
	edit(k)
	require.NoError(t, k.Validate())
	require.NoError(t, k.Init())
	k.w.init(k)
	return k
}

func metric(name string, tags map[string]string, fields map[string]any) morse.Metric {
	m, _ := morse.NewMetricFromMaps(name, tags, fields, time.Unix(1700000000, 5))
	return m
}

func TestRouting(t *testing.T) {
	m := metric("cpu", map[string]string{"topic": "t1", "host": "h1", "dc": "eu"}, map[string]any{"v": 1.0})
	for _, tc := range []struct {
		name  string
		edit  func(*Kafka)
		topic string
		tags  int
		key   string
	}{
		{"defaults", func(*Kafka) {}, "telegraf", 3, ""},
		{"topic_tag", func(k *Kafka) { k.TopicTag = "topic" }, "t1", 3, ""},
		{"topic_tag excluded", func(k *Kafka) { k.TopicTag, k.ExcludeTopicTag = "topic", true }, "t1", 2, ""},
		{"missing topic_tag", func(k *Kafka) { k.TopicTag = "nope" }, "telegraf", 3, ""},
		{"suffix measurement", func(k *Kafka) { k.TopicSuffix = TopicSuffix{Method: "measurement", Separator: "_"} }, "telegraf_cpu", 3, ""},
		{"suffix tags", func(k *Kafka) {
			k.TopicSuffix = TopicSuffix{Method: "tags", Keys: []string{"dc", "nope", "host"}, Separator: "."}
		}, "telegraf.eu.h1", 3, ""},
		{"routing_tag", func(k *Kafka) { k.RoutingTag = "host" }, "telegraf", 3, "h1"},
		{"routing_key fallback", func(k *Kafka) { k.RoutingTag, k.RoutingKey = "nope", "fixed" }, "telegraf", 3, "fixed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newTestOutput(t, tc.edit)
			got, topic := k.topic(m)
			require.Equal(t, tc.topic, topic)
			require.Len(t, got.Tags(), tc.tags)
			key, ok := k.appendKey(nil, got)
			require.Equal(t, tc.key != "", ok)
			require.Equal(t, tc.key, string(key))
		})
	}
	// A routing tag whose value is empty gives no key, as in Telegraf (not routing_key).
	k := newTestOutput(t, func(k *Kafka) { k.RoutingTag, k.RoutingKey = "empty", "fixed" })
	_, ok := k.appendKey(nil, m.WithTag("empty", ""))
	require.False(t, ok)
	k = newTestOutput(t, func(k *Kafka) { k.RoutingKey = "random" })
	a, _ := k.appendKey(nil, m)
	b, _ := k.appendKey(nil, m)
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, string(a))
	require.NotEqual(t, a, b)
}

func TestTimestampAndHeaders(t *testing.T) {
	m := metric("cpu", map[string]string{"host": "h1"}, map[string]any{"v": 1.5})
	k := newTestOutput(t, func(k *Kafka) {
		k.Headers = map[string]string{"name": "{{ .Name }}", "host": `{{ .Tag "host" }}`, "v": `{{ .Field "v" }}`, "bad": `{{ .Nope }}`}
	})
	require.Equal(t, m.Time(), k.timestamp(m))
	require.True(t, k.timestamp(m.WithTime(time.Unix(-1, 0))).IsZero(), "Kafka has no time before 1970")
	hs, err := k.headers(m)
	require.ErrorContains(t, err, `header "bad"`)
	require.Equal(t, []kgo.RecordHeader{{Key: "host", Value: []byte("h1")}, {Key: "name", Value: []byte("cpu")}, {Key: "v", Value: []byte("1.5")}}, hs)
	str := newTestOutput(t, func(k *Kafka) { k.Headers = map[string]string{"all": "{{ .String }}"} })
	hs, err = str.headers(m)
	require.NoError(t, err)
	require.Equal(t, "cpu map[host:h1] map[v:1.5] 1700000000000000005", string(hs[0].Value), "as Telegraf's metric.String")
	now := newTestOutput(t, func(k *Kafka) { k.ProducerTimestamp = "now" })
	require.True(t, now.timestamp(m).IsZero(), "the client stamps the time of the write")
}

// TestSplit checks that a metric larger than max_message_bytes is split into parts that
// each fit, and that a field that fits nowhere is left out and counted.
func TestSplit(t *testing.T) {
	big := strings.Repeat("x", 300)
	fields := map[string]any{}
	for _, c := range "abcdefghij" {
		fields[string(c)] = big
	}
	k := newTestOutput(t, func(k *Kafka) { k.MaxMessageBytes = 1000 })
	j := k.w.prepare([]morse.Metric{
		metric("split", map[string]string{"host": "h"}, fields),
		metric("huge", nil, map[string]any{"v": strings.Repeat("y", 2000)}),
		metric("partly", nil, map[string]any{"ok": 1.0, "v": strings.Repeat("y", 2000)}),
	})
	// Halving 10 fields of 300 bytes under 907: 5+5, each 2+(1+2).
	require.Equal(t, []metricState{
		{records: 6},
		{skipped: 1, reason: ReasonMessageTooLarge, err: j.metrics[1].err},
		{records: 1, skipped: 1, reason: ReasonMessageTooLarge, err: j.metrics[2].err},
	}, j.metrics)
	seen := map[string]bool{}
	for _, r := range j.recs[:6] {
		require.LessOrEqual(t, len(r.Value), 1000-recordOverhead)
		require.True(t, strings.HasPrefix(string(r.Value), "split,host=h "), "%s", r.Value)
		for _, c := range "abcdefghij" {
			if strings.Contains(string(r.Value), string(c)+`="x`) {
				require.False(t, seen[string(c)], "field %c twice", c)
				seen[string(c)] = true
			}
		}
	}
	require.Len(t, seen, 10, "every field in exactly one part")
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err       error
		reason    string
		permanent bool
		batchWide bool
	}{
		{kerr.MessageTooLarge, ReasonMessageTooLarge, true, true},
		{kerr.InvalidTimestamp, ReasonInvalidTimestamp, true, true},
		{kerr.InvalidRecord, ReasonInvalidRecord, true, true},
		{kerr.InvalidTopicException, ReasonInvalidTopic, true, false},
		{kerr.UnknownTopicOrPartition, "", false, false},
		{kerr.TopicAuthorizationFailed, "", false, false},
		{kerr.SaslAuthenticationFailed, "", false, false},
		{kgo.ErrRecordTimeout, "", false, false},
		{errors.New("dial tcp: connection refused"), "", false, false},
	} {
		reason, permanent, batchWide := classify(tc.err)
		require.Equal(t, []any{tc.reason, tc.permanent, tc.batchWide}, []any{reason, permanent, batchWide}, "%v", tc.err)
	}
}

// TestTagOf holds the text scan of line metrics to Metric.Tag, over lines with and without
// escapes, for keys present and absent.
func TestTagOf(t *testing.T) {
	lines := "cpu,host=web-01,region=eu v=1 1\n" +
		"cpu v=1 1\n" +
		"cpu,host=a\\ b,dc=x v=1 1\n" +
		"my\\ cpu,host=h,hostname=long v=1i 1\n" +
		"cpu,a=1,b=2,host=z v=\"s\" 1\n" +
		"cpu,ho\\=st=1,host=a\\,b,x\\ y=\\=z v=1 1\n" +
		"host=m,a=host,xhost=1,host=2,hostname=3 v=1 1\n"
	p := &influxparser.Parser{LineMetrics: func() bool { return true }}
	var ms []morse.Metric
	res := p.Parse([]byte(lines), func(m morse.Metric) { ms = append(ms, m) })
	require.Zero(t, res.Errors, "%v", res.Err())
	require.Len(t, ms, 7)
	lineMetrics := 0
	for _, m := range ms {
		if _, ok := m.Line(); ok {
			lineMetrics++
		}
		for _, key := range []string{"host", "region", "dc", "hostname", "a", "b", "nope", "cpu", "ho=st", "x y", "ho", "xhost", "host=m"} {
			v, ok := tagOf(m, key)
			wv, wok := m.Tag(key)
			require.Equal(t, []any{wv, wok}, []any{v, ok}, "%s in %s", key, m.Name())
		}
	}
	require.Equal(t, len(ms), lineMetrics, "the parser made line metrics of every line")
}

// telegrafConfig is a Telegraf 1.39 [[outputs.kafka]] table with every option of its
// sample.conf set.
const telegrafConfig = `
[[outputs.kafka]]
  brokers = ["k1:9092", "k2:9092"]
  topic = "metrics"
  topic_tag = "dest"
  exclude_topic_tag = true
  client_id = "edge"
  version = "2.8.0"
  routing_tag = "host"
  routing_key = "random"
  compression_codec = 4
  idempotent_writes = true
  required_acks = -1
  max_retry = 5
  max_message_bytes = 500000
  producer_timestamp = "now"
  enable_tls = true
  tls_ca = "/etc/ca.pem"
  tls_cert = "/etc/cert.pem"
  tls_key = "/etc/key.pem"
  insecure_skip_verify = false
  keep_alive_period = "15s"
  socks5_enabled = true
  socks5_address = "127.0.0.1:1080"
  socks5_username = "alice"
  socks5_password = "pass123"
  sasl_username = "u"
  sasl_password = "p"
  sasl_mechanism = "SCRAM-SHA-512"
  sasl_gssapi_service_name = ""
  sasl_gssapi_auth_type = "KRB5_USER_AUTH"
  sasl_gssapi_kerberos_config_path = "/"
  sasl_gssapi_realm = "realm"
  sasl_gssapi_key_tab_path = ""
  sasl_gssapi_disable_pafxfast = false
  sasl_access_token = ""
  sasl_aws_msk_iam_region = ""
  sasl_extensions = {}
  sasl_version = 1
  metadata_full = false
  metadata_retry_max = 0
  metadata_retry_type = "exponential"
  metadata_retry_backoff = "100ms"
  metadata_retry_max_duration = "5s"
  data_format = "json"
  json_timestamp_units = "1ms"
  [outputs.kafka.topic_suffix]
    method = "tags"
    keys = ["foo", "bar"]
    separator = "_"
  [outputs.kafka.headers]
    metric_name = '{{ .Name }}'
    my_tag = 'foo-{{ .Tag "mytag" }}'
`

// TestTelegrafConfig decodes a Telegraf table that sets every option: each key is known,
// lands in its field, and validates.
func TestTelegrafConfig(t *testing.T) {
	var cfg struct {
		Outputs struct {
			Kafka []*Kafka `toml:"kafka"`
		} `toml:"outputs"`
	}
	cfg.Outputs.Kafka = []*Kafka{New()}
	md, err := toml.Decode(telegrafConfig, &cfg)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "every key must be known")
	k := cfg.Outputs.Kafka[0]
	require.NoError(t, k.Validate())
	require.Equal(t, []string{"k1:9092", "k2:9092"}, k.Brokers)
	require.Equal(t, TopicSuffix{Method: "tags", Keys: []string{"foo", "bar"}, Separator: "_"}, k.TopicSuffix)
	require.Equal(t, []any{"SCRAM-SHA-512", morse.Secret("p"), "/etc/ca.pem", true, "json", morse.Duration(time.Millisecond)},
		[]any{k.SASLMechanism, k.SASLPassword, k.Config.CA, k.Socks5Enabled, k.DataFormat, k.JSON.TimestampUnits})
	require.Equal(t, morse.Duration(15*time.Second), *k.KeepAlivePeriod)
	require.Len(t, k.Headers, 2)
}

// TestMaxMessageBytesZero: max_message_bytes = 0 is the default, 1000000, as in Telegraf
// (sarama keeps its own default), not a limit that no message meets.
func TestMaxMessageBytesZero(t *testing.T) {
	k := newTestOutput(t, func(k *Kafka) { k.MaxMessageBytes = 0 })
	require.Equal(t, DefaultMaxMessageBytes, k.maxMessageBytes())
	j := k.w.prepare([]morse.Metric{metric("big", nil, map[string]any{"v": strings.Repeat("y", 5000)})})
	require.Equal(t, []metricState{{records: 1}}, j.metrics)
}

// TestLineMetricsAsExpanded: a line metric makes the same records as its expanded form
// under every option that lets line metrics through (WritesLines), and the options that
// take metrics apart turn them away.
func TestLineMetricsAsExpanded(t *testing.T) {
	line := morse.NewLineMetric(morse.LineText{Text: `cpu,dc=eu-west,host=h\ 1 usage=1.5,n=7u,s="a b"`, Uints: true},
		time.Unix(1700000000, 5))
	for _, tc := range []struct {
		name  string
		edit  func(*Kafka)
		lines bool
	}{
		{"defaults", func(*Kafka) {}, true},
		{"routing_tag", func(k *Kafka) { k.RoutingTag = "host" }, true},
		{"topic_tag", func(k *Kafka) { k.TopicTag = "dc" }, true},
		{"topic_suffix tags", func(k *Kafka) {
			k.TopicSuffix = TopicSuffix{Method: "tags", Keys: []string{"dc", "absent"}, Separator: "."}
		}, true},
		{"uint support", func(k *Kafka) { k.InfluxUintSupport = true }, true},
		{"omit timestamp", func(k *Kafka) { k.InfluxOmitTimestamp = true }, true},
		{"sort fields", func(k *Kafka) { k.InfluxSortFields = true }, false},
		{"exclude_topic_tag", func(k *Kafka) { k.TopicTag, k.ExcludeTopicTag = "dc", true }, false},
		{"json", func(k *Kafka) { k.DataFormat = "json" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newTestOutput(t, tc.edit)
			require.Equal(t, tc.lines, k.WritesLines())
			got := k.w.prepare([]morse.Metric{line})
			want := k.w.prepare([]morse.Metric{line.Expanded()})
			require.Len(t, got.recs, 1)
			require.Equal(t, want.recs[0].Topic, got.recs[0].Topic)
			require.Equal(t, string(want.recs[0].Key), string(got.recs[0].Key))
			require.Equal(t, string(want.recs[0].Value), string(got.recs[0].Value))
		})
	}
}

// TestEmptyTopicRefused: a topic that comes out empty (no topic, and a suffix of tags the
// metric lacks) is refused as invalid_topic, not sent to be retried for ever.
func TestEmptyTopicRefused(t *testing.T) {
	k := newTestOutput(t, func(k *Kafka) {
		k.Topic, k.TopicSuffix = "", TopicSuffix{Method: "tags", Keys: []string{"nope"}}
	})
	m := metric("cpu", nil, map[string]any{"v": 1.0})
	_, topic := k.topic(m)
	require.Empty(t, topic)
	j := k.w.prepare([]morse.Metric{m, m})
	defer k.w.release(j)
	for i := range j.metrics {
		require.Equal(t, ReasonInvalidTopic, j.metrics[i].reason, "metric %d", i)
	}
	require.Empty(t, j.recs)
}
