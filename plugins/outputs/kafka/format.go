package kafka

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse/plugins/serializers/dataformat"
)

// WritesLines tells the agent that line metrics (morse.NewLineMetric) may come as they are:
// the influx serializer writes their text, and routing_tag, topic_tag and a "tags"
// topic_suffix read their tags from it without decoding the rest. Other formats,
// influx_sort_fields and exclude_topic_tag take every metric apart, so they take them
// expanded.
func (k *Kafka) WritesLines() bool {
	return k.Format.WritesLines() && !k.ExcludeTopicTag
}

// Format is data_format and the options of each format, with Telegraf's keys: the
// serializer registry's config. Each metric is one message, as in Telegraf.
type Format = dataformat.Config

// codecs maps compression_codec to the client's codecs.
var codecs = []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}

// sortedKeys returns the keys of m in order, so that headers are added in a stable order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
