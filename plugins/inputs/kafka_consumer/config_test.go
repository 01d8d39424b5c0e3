package kafka_consumer

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
)

// TestValidate: each bad option is named by its key.
func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*KafkaConsumer)
		key  string // "" when valid
	}{
		{name: "defaults with a topic", edit: func(*KafkaConsumer) {}},
		{name: "no topic", edit: func(k *KafkaConsumer) { k.Topics = nil }, key: "topics"},
		{name: "regexps only", edit: func(k *KafkaConsumer) { k.Topics, k.TopicRegexps = nil, []string{"^m.*"} }},
		{name: "bad regexp", edit: func(k *KafkaConsumer) { k.TopicRegexps = []string{"*test"} }, key: "topic_regexps"},
		{name: "bad topic", edit: func(k *KafkaConsumer) { k.Topics = []string{"a b"} }, key: "topics"},
		{name: "no brokers", edit: func(k *KafkaConsumer) { k.Brokers = nil }, key: "brokers"},
		{name: "offset", edit: func(k *KafkaConsumer) { k.Offset = "latest" }, key: "offset"},
		{name: "newest", edit: func(k *KafkaConsumer) { k.Offset = "newest" }},
		{name: "balance", edit: func(k *KafkaConsumer) { k.BalanceStrategy = "cooperative" }, key: "balance_strategy"},
		{name: "sticky", edit: func(k *KafkaConsumer) { k.BalanceStrategy = "sticky" }},
		{name: "undelivered", edit: func(k *KafkaConsumer) { k.MaxUndeliveredMessages = 0 }, key: "max_undelivered_messages"},
		{name: "message len", edit: func(k *KafkaConsumer) { k.MaxMessageLen = -1 }, key: "max_message_len"},
		{name: "timestamp source", edit: func(k *KafkaConsumer) { k.TimestampSource = "broker" }, key: "timestamp_source"},
		{name: "format", edit: func(k *KafkaConsumer) { k.DataFormat = "xml" }, key: "data_format"},
		{name: "group", edit: func(k *KafkaConsumer) { k.ConsumerGroup = "" }, key: "consumer_group"},
		{name: "connection strategy", edit: func(k *KafkaConsumer) { k.ConnectionStrategy = "later" }, key: "connection_strategy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := New()
			k.Topics = []string{"metrics"}
			tc.edit(k)
			err := k.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.key)
		})
	}
}

// TestTelegrafConfig: a Telegraf table with every documented option decodes and validates,
// and the options without effect are each warned of.
func TestTelegrafConfig(t *testing.T) {
	const table = `
brokers = ["localhost:9092"]
kafka_version = "2.6.0"
topics = ["telegraf"]
topic_regexps = ["^metric[0-9]+$"]
topic_tag = "topic"
msg_headers_as_tags = ["host"]
msg_header_as_metric_name = "name"
timestamp_source = "inner"
client_id = "Telegraf"
enable_tls = false
keep_alive_period = "15s"
sasl_username = "u"
sasl_password = "p"
sasl_mechanism = "PLAIN"
metadata_full = false
consumer_group = "telegraf_metrics_consumers"
compression_codec = 1
offset = "oldest"
balance_strategy = "range"
metadata_retry_max = 0
metadata_retry_type = "constant"
metadata_retry_backoff = 0
metadata_retry_max_duration = 0
resolve_canonical_bootstrap_servers_only = true
max_message_len = 1000000
max_undelivered_messages = 1000
max_processing_time = "100ms"
consumer_fetch_default = "1MB"
consumer_fetch_min = "1B"
consumer_fetch_max_wait = "500ms"
connection_strategy = "startup"
data_format = "influx"
`
	k := New()
	md, err := toml.Decode(table, k)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, k.Validate())
	require.NoError(t, k.Init())
	w := strings.Join(k.warnings(), "\n")
	for _, key := range []string{"kafka_version", "compression_codec", "max_processing_time", "resolve_canonical_bootstrap_servers_only", "connection_strategy"} {
		require.Contains(t, w, key)
	}
	require.Equal(t, int64(1_000_000), int64(k.ConsumerFetchDefault))
}
