package kafka

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	common "github.com/morse-agent/morse/plugins/common/kafka"
	"github.com/morse-agent/morse/plugins/serializers/influx"
	"github.com/morse-agent/morse/plugins/serializers/json"
	"github.com/morse-agent/morse/plugins/serializers/msgpack"
)

// serializer writes one metric as one message.
type serializer interface {
	AppendMetric(dst []byte, m morse.Metric) ([]byte, error)
}

// WritesLines tells the agent that line metrics (morse.NewLineMetric) may come as they are:
// the influx serializer writes their text, and routing_tag, topic_tag and a "tags"
// topic_suffix read their tags from it without decoding the rest. JSON, MessagePack,
// influx_sort_fields and exclude_topic_tag take every metric apart, so they take them
// expanded.
func (k *Kafka) WritesLines() bool {
	return (k.DataFormat == "" || k.DataFormat == "influx") && !k.InfluxSortFields && !k.ExcludeTopicTag
}

// Format holds data_format and the options of each format, with Telegraf's keys.
type Format struct {
	DataFormat string `toml:"data_format"` // "influx" (default), "json" or "msgpack"

	InfluxUintSupport   bool `toml:"influx_uint_support"`
	InfluxSortFields    bool `toml:"influx_sort_fields"`
	InfluxMaxLineBytes  int  `toml:"influx_max_line_bytes"`
	InfluxOmitTimestamp bool `toml:"influx_omit_timestamp"`

	JSONTimestampUnits      morse.Duration `toml:"json_timestamp_units"`
	JSONTimestampFormat     string         `toml:"json_timestamp_format"`
	JSONTransformation      string         `toml:"json_transformation"`
	JSONNestedFieldsInclude []string       `toml:"json_nested_fields_include"`
	JSONNestedFieldsExclude []string       `toml:"json_nested_fields_exclude"`
}

func (f *Format) validate() error {
	errs := []error{common.CheckDataFormat(f.DataFormat)}
	if f.InfluxMaxLineBytes < 0 {
		errs = append(errs, morse.Errorf("influx_max_line_bytes", "must not be negative, got %d", f.InfluxMaxLineBytes))
	}
	if f.JSONTransformation != "" {
		errs = append(errs, morse.Errorf("json_transformation", "JSONata transformations are not supported; leave it empty"))
	}
	return errors.Join(errs...)
}

// serializer builds the serializer for the format.
func (f *Format) serializer() (serializer, error) {
	switch f.DataFormat {
	case "json":
		return json.New(json.Options{
			TimestampUnits:      f.JSONTimestampUnits,
			TimestampFormat:     f.JSONTimestampFormat,
			NestedFieldsInclude: f.JSONNestedFieldsInclude,
			NestedFieldsExclude: f.JSONNestedFieldsExclude,
		})
	case "msgpack":
		return msgpack.New(), nil
	}
	ser := influx.New(influx.Options{UintSupport: f.InfluxUintSupport, MaxLineBytes: f.InfluxMaxLineBytes})
	if !f.InfluxSortFields && !f.InfluxOmitTimestamp {
		return ser, nil
	}
	return &influxPrepared{ser: ser, sort: f.InfluxSortFields, omitTime: f.InfluxOmitTimestamp}, nil
}

// influxPrepared applies influx_sort_fields and influx_omit_timestamp to a copy of the
// metric before writing it.
type influxPrepared struct {
	ser      *influx.Serializer
	sort     bool
	omitTime bool
}

func (p *influxPrepared) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	if p.omitTime {
		m = m.WithTime(time.Time{})
	}
	if p.sort {
		m = influx.SortFields(m, nil) // writes may run at once: no shared scratch
	}
	return p.ser.AppendMetric(dst, m)
}

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
