// Package kafka is the Kafka output, with Telegraf's outputs.kafka options: each metric
// becomes one message (record) in the data format asked for, on a topic chosen per metric,
// keyed by a tag or a fixed key so that a series stays on one partition.
//
// Writes are classified like any sink's (see write.go). With required_acks = -1 and
// idempotent_writes = true, the client's own retries never duplicate a record. Once part of
// a batch is stored, the write retries the rest itself, within its time (WriteTimeout: twice
// timeout), so that the stored part is not sent again; a rest still unstored when that time
// is up (a partition refusing writes for longer) hands the whole batch back to be retried,
// and the part already stored is then written again, as it is after a write cut short by
// shutdown.
package kafka

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	common "github.com/morse-agent/morse/plugins/common/kafka"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Write metrics to Kafka topics, one message per metric"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "kafka",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Defaults, as Telegraf's.
const (
	DefaultTopic           = "telegraf"
	DefaultMaxRetry        = 3
	DefaultRequiredAcks    = -1
	DefaultMaxMessageBytes = 1000000
	// DefaultTimeout bounds how long a record waits to be sent while no broker takes it.
	DefaultTimeout = 30 * time.Second
)

// Kafka writes metrics to Kafka. The TOML keys are Telegraf's, so a Telegraf
// [[outputs.kafka]] table decodes unchanged. Build one with New, set fields, then Init and
// Connect; the agent does the same from a config file.
type Kafka struct {
	Brokers           []string          `toml:"brokers"`
	Topic             string            `toml:"topic"`
	TopicTag          string            `toml:"topic_tag"`
	ExcludeTopicTag   bool              `toml:"exclude_topic_tag"`
	TopicSuffix       TopicSuffix       `toml:"topic_suffix"`
	RoutingTag        string            `toml:"routing_tag"`
	RoutingKey        string            `toml:"routing_key"`
	CompressionCodec  int               `toml:"compression_codec"`
	IdempotentWrites  bool              `toml:"idempotent_writes"`
	RequiredAcks      int               `toml:"required_acks"`
	MaxRetry          int               `toml:"max_retry"`
	MaxMessageBytes   int               `toml:"max_message_bytes"`
	ProducerTimestamp string            `toml:"producer_timestamp"`
	Headers           map[string]string `toml:"headers"`
	MetricNameHeader  string            `toml:"metric_name_header"` // deprecated: headers = {name = "{{ .Name }}"}
	// Timeout is morse's: how long records may wait for a broker that takes them before the
	// write fails and is retried. Records already sent are waited for until the broker
	// answers, because failing them could duplicate them.
	Timeout morse.Duration `toml:"timeout"`

	common.ClientConfig
	Format

	log        *slog.Logger
	headerTmpl []headerTemplate
	ser        serializers.Serializer // writes one metric as one message
	// serStats counts internal_serializer; nil without an agent. Writes may run
	// concurrently, hence the atomic.
	serStats atomic.Pointer[selfstat.SerializerStats]

	mu sync.Mutex
	cl *kgo.Client
	// extraOpts are appended to the client's options; tests use them.
	extraOpts []kgo.Opt
	w         writer
}

// TopicSuffix is Telegraf's [outputs.kafka.topic_suffix] table.
type TopicSuffix struct {
	Method    string   `toml:"method"` // "", "measurement" or "tags"
	Keys      []string `toml:"keys"`
	Separator string   `toml:"separator"`
}

type headerTemplate struct {
	name string
	tmpl *template.Template
}

// New returns an output with Telegraf's defaults.
func New() *Kafka {
	return &Kafka{
		Brokers:         []string{"localhost:9092"},
		Topic:           DefaultTopic,
		MaxRetry:        DefaultMaxRetry,
		RequiredAcks:    DefaultRequiredAcks,
		MaxMessageBytes: DefaultMaxMessageBytes,
		Timeout:         morse.Duration(DefaultTimeout),
		Format:          Format{DataFormat: "influx"},
	}
}

var (
	_ morse.Output           = (*Kafka)(nil)
	_ morse.Validator        = (*Kafka)(nil)
	_ morse.Initializer      = (*Kafka)(nil)
	_ morse.LoggerSetter     = (*Kafka)(nil)
	_ morse.ConcurrentWriter = (*Kafka)(nil)
	_ morse.LineWriter       = (*Kafka)(nil)
	_ morse.WriteTimeouter   = (*Kafka)(nil)
)

// SetLogger sets the logger.
func (k *Kafka) SetLogger(l *slog.Logger) { k.log = l }

func (k *Kafka) logger() *slog.Logger {
	if k.log == nil {
		return slog.Default()
	}
	return k.log
}

// Validate checks the options after decoding, naming the key at fault.
func (k *Kafka) Validate() error {
	var errs []error
	if len(k.Brokers) == 0 {
		errs = append(errs, morse.Errorf("brokers", "at least one broker is needed, such as \"localhost:9092\""))
	}
	if err := common.ValidTopic(k.Topic); err != nil && k.TopicSuffix.Method == "" {
		errs = append(errs, morse.Errorf("topic", "%w", err))
	}
	switch k.TopicSuffix.Method {
	case "", "measurement", "tags":
	default:
		errs = append(errs, morse.Errorf("topic_suffix", "unknown method %q; use \"measurement\" or \"tags\"", k.TopicSuffix.Method))
	}
	if k.CompressionCodec < 0 || k.CompressionCodec >= len(codecs) {
		errs = append(errs, morse.Errorf("compression_codec", "must be 0 (none), 1 (gzip), 2 (snappy), 3 (lz4) or 4 (zstd), got %d", k.CompressionCodec))
	}
	switch k.RequiredAcks {
	case 0, 1, -1:
	default:
		errs = append(errs, morse.Errorf("required_acks", "must be 0, 1 or -1, got %d", k.RequiredAcks))
	}
	if k.IdempotentWrites && k.RequiredAcks != -1 {
		errs = append(errs, morse.Errorf("idempotent_writes", "needs required_acks = -1, as Kafka requires"))
	}
	if k.MaxRetry < 0 {
		errs = append(errs, morse.Errorf("max_retry", "must not be negative, got %d", k.MaxRetry))
	}
	if k.MaxMessageBytes != 0 && k.MaxMessageBytes < minMessageBytes {
		errs = append(errs, morse.Errorf("max_message_bytes", "must be at least %d, got %d", minMessageBytes, k.MaxMessageBytes))
	}
	switch k.ProducerTimestamp {
	case "", "metric", "now":
	default:
		errs = append(errs, morse.Errorf("producer_timestamp", "must be \"metric\" or \"now\", got %q", k.ProducerTimestamp))
	}
	if k.Timeout <= 0 {
		errs = append(errs, morse.Errorf("timeout", "must be positive: it bounds how long records wait for a broker, and 0 would let none"))
	}
	if err := k.ClientConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := k.Format.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Init prepares the serializer and the header templates, and logs once each option that is
// accepted but has no effect.
func (k *Kafka) Init() error {
	var err error
	if k.ser, err = k.Format.New(); err != nil {
		return err
	}
	headers := k.Headers
	if k.MetricNameHeader != "" {
		headers = make(map[string]string, len(k.Headers)+1)
		for n, v := range k.Headers {
			headers[n] = v
		}
		headers[k.MetricNameHeader] = "{{ .Name }}"
		k.logger().Warn("kafka: metric_name_header is deprecated; use headers = {" + k.MetricNameHeader + " = \"{{ .Name }}\"}")
	}
	k.headerTmpl = k.headerTmpl[:0]
	for _, name := range sortedKeys(headers) {
		tmpl, err := template.New(name).Option("missingkey=zero").Parse(headers[name])
		if err != nil {
			return morse.Errorf("headers", "header %q: %w", name, err)
		}
		k.headerTmpl = append(k.headerTmpl, headerTemplate{name: name, tmpl: tmpl})
	}
	for _, w := range k.ClientConfig.Warnings() {
		k.logger().Warn("kafka: " + w)
	}
	return nil
}

// clientOptions are the franz-go options for the configured producer.
func (k *Kafka) clientOptions() ([]kgo.Opt, error) {
	opts, err := k.ClientConfig.Options(k.Brokers, k.logger())
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	acks := map[int]kgo.Acks{0: kgo.NoAck(), 1: kgo.LeaderAck(), -1: kgo.AllISRAcks()}[k.RequiredAcks]
	opts = append(opts,
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codecs[k.CompressionCodec]),
		kgo.ProducerBatchMaxBytes(int32(k.maxMessageBytes())),
		// Records fail after max_retry retries; the write then reports what happened to
		// each. The timeout is the write's own (see job.produce): the client's record
		// timeout counts from the record's timestamp, which is the metric's time.
		kgo.RecordRetries(k.MaxRetry),
		// A write hands the client its whole batch at once and then waits for the
		// acknowledgements, so there is little to wait for: franz-go's default linger of
		// 10 ms delays every write (BenchmarkEdgeToKafka: 70k lines/s). Without linger, the
		// first records of a batch leave alone and the rest follow: the fastest on an idle
		// machine (360-430k lines/s against 210-330k with 1 ms) but, with the cores busy,
		// half as fast as 1 ms (87k against 176k); 1 ms holds up under load.
		kgo.ProducerLinger(time.Millisecond),
		// The broker decides: with auto.create.topics.enable a topic is created on first
		// use, as with Telegraf's sarama client.
		kgo.AllowAutoTopicCreation(),
		kgo.UnknownTopicRetries(unknownTopicRetries),
	)
	if !k.IdempotentWrites {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return append(opts, k.extraOpts...), nil
}

// maxMessageBytes is max_message_bytes; 0 means the default, as in Telegraf, where sarama
// then keeps its own 1000000.
func (k *Kafka) maxMessageBytes() int { return cmp.Or(k.MaxMessageBytes, DefaultMaxMessageBytes) }

// unknownTopicRetries is how many metadata answers of "unknown topic" a record waits out:
// a topic being created on first use answers so for a moment, a missing one for good.
const unknownTopicRetries = 10

// Connect creates the client and checks that a broker answers.
func (k *Kafka) Connect(ctx context.Context) error {
	if k.ser == nil {
		if err := k.Init(); err != nil {
			return err
		}
	}
	opts, err := k.clientOptions()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, time.Duration(k.Timeout))
	defer cancel()
	if err := cl.Ping(pingCtx); err != nil {
		cl.Close()
		return fmt.Errorf("kafka: no broker of %s answers: %w", strings.Join(k.Brokers, ", "), err)
	}
	k.mu.Lock()
	old := k.cl
	k.cl = cl
	k.w.init(k)
	k.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// MaxConcurrentWrites lets a backlog be written several batches at a time: the client
// pipelines their requests, so one broker round trip does not cap the output.
func (k *Kafka) MaxConcurrentWrites() int { return 4 }

// Close closes the client. Records it still holds fail; the agent keeps their metrics.
func (k *Kafka) Close() error {
	k.mu.Lock()
	cl := k.cl
	k.cl = nil
	k.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
	return nil
}

func (k *Kafka) client() *kgo.Client {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cl
}

// SetSelfStats implements morse.SelfStatsSetter: the agent hands over its registry, where
// the output counts what it serializes (internal_serializer, tagged with data_format), as
// Telegraf's outputs with a data_format do.
func (k *Kafka) SetSelfStats(r *selfstat.Registry) {
	k.serStats.Store(selfstat.NewSerializerStats(r, k.FormatName()))
}
