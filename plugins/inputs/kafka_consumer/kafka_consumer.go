// Package kafka_consumer is the Kafka consumer input, with Telegraf's inputs.kafka_consumer
// options. It reads messages as a member of a consumer group, parses each into metrics with
// the data format asked for, and commits a message's offset only once the message is done:
// every output its metrics went to has written them or dropped them for good (see
// morse.TrackingAccumulator), and so has every message before it in its partition. A crash
// or a kill -9 therefore loses nothing and re-reads at most what was in flight.
//
// Telegraf marks a message when it is delivered, and sarama commits the highest mark of a
// partition, so a message still in flight behind a delivered one can be committed past and
// lost in a crash; morse commits a partition's offset only up to its first message not done.
// As in Telegraf, a message whose metrics an output dropped for good is done too: reading
// it again would drop it again.
package kafka_consumer

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	common "github.com/morse-agent/morse/plugins/common/kafka"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Read metrics from Kafka topics as a consumer group, committing what the outputs have written"

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "kafka_consumer",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Defaults, as Telegraf's.
const (
	DefaultConsumerGroup          = "telegraf_metrics_consumers"
	DefaultMaxUndeliveredMessages = 1000
	DefaultOffset                 = "oldest"
)

// KafkaConsumer reads metrics from Kafka. The TOML keys are Telegraf's, so a Telegraf
// [[inputs.kafka_consumer]] table decodes unchanged.
type KafkaConsumer struct {
	Brokers                []string        `toml:"brokers"`
	Topics                 []string        `toml:"topics"`
	TopicRegexps           []string        `toml:"topic_regexps"`
	TopicTag               string          `toml:"topic_tag"`
	MsgHeadersAsTags       []string        `toml:"msg_headers_as_tags"`
	MsgHeaderAsMetricName  string          `toml:"msg_header_as_metric_name"`
	TimestampSource        string          `toml:"timestamp_source"`
	ConsumerGroup          string          `toml:"consumer_group"`
	Offset                 string          `toml:"offset"`
	BalanceStrategy        string          `toml:"balance_strategy"`
	MaxMessageLen          int             `toml:"max_message_len"`
	MaxUndeliveredMessages int             `toml:"max_undelivered_messages"`
	ConsumerFetchDefault   morse.Size      `toml:"consumer_fetch_default"`
	ConsumerFetchMin       morse.Size      `toml:"consumer_fetch_min"`
	ConsumerFetchMaxWait   morse.Duration  `toml:"consumer_fetch_max_wait"`
	KafkaVersion           string          `toml:"kafka_version"`
	CompressionCodec       int             `toml:"compression_codec"`
	MaxProcessingTime      *morse.Duration `toml:"max_processing_time"`
	ConnectionStrategy     string          `toml:"connection_strategy"`
	ResolveCanonical       bool            `toml:"resolve_canonical_bootstrap_servers_only"`

	common.ClientConfig
	Format

	// CommitInterval is morse's: the least time between two commits of a partition's
	// offset. Commits follow the deliveries as closely as that allows, so that a crash
	// re-reads little.
	CommitInterval morse.Duration `toml:"commit_interval"`
	// SessionTimeout is morse's: how long the group waits for a member that stopped
	// heartbeating before it hands its partitions to the others. The default, 10 s, is
	// sarama's and so Telegraf's.
	SessionTimeout morse.Duration `toml:"session_timeout"`
	// RebalanceTimeout is morse's: how long the group waits for every member to rejoin
	// during a rebalance (60 s, as sarama's).
	RebalanceTimeout morse.Duration `toml:"rebalance_timeout"`

	log       *slog.Logger
	stats     *selfstat.PluginStats
	parse     parseFunc
	regexps   []*regexp.Regexp
	extraOpts []kgo.Opt // tests add theirs

	mu     sync.Mutex
	cl     *kgo.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	c      *consumer
}

// New returns a consumer with Telegraf's defaults.
func New() *KafkaConsumer {
	return &KafkaConsumer{
		Brokers:                []string{"localhost:9092"},
		Topics:                 []string{"telegraf"},
		ConsumerGroup:          DefaultConsumerGroup,
		Offset:                 DefaultOffset,
		MaxUndeliveredMessages: DefaultMaxUndeliveredMessages,
		CommitInterval:         morse.Duration(100 * time.Millisecond),
		SessionTimeout:         morse.Duration(10 * time.Second),
		RebalanceTimeout:       morse.Duration(60 * time.Second),
		Format:                 Format{DataFormat: "influx"},
	}
}

var (
	_ morse.ServiceInput = (*KafkaConsumer)(nil)
	_ morse.Validator    = (*KafkaConsumer)(nil)
	_ morse.Initializer  = (*KafkaConsumer)(nil)
	_ morse.LoggerSetter = (*KafkaConsumer)(nil)
	_ morse.StatsSetter  = (*KafkaConsumer)(nil)
)

// SetLogger sets the logger.
func (k *KafkaConsumer) SetLogger(l *slog.Logger) { k.log = l }

// SetStats sets the plugin's counters.
func (k *KafkaConsumer) SetStats(s *selfstat.PluginStats) { k.stats = s }

func (k *KafkaConsumer) logger() *slog.Logger {
	if k.log == nil {
		return slog.Default()
	}
	return k.log
}

// Validate checks the options after decoding, naming the key at fault.
func (k *KafkaConsumer) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, morse.Errorf(key, format, args...)) }
	if len(k.Brokers) == 0 {
		bad("brokers", "at least one broker is needed, such as \"localhost:9092\"")
	}
	if len(k.Topics) == 0 && len(k.TopicRegexps) == 0 {
		bad("topics", "name at least one topic, or a pattern in topic_regexps")
	}
	for _, t := range k.Topics {
		if err := common.ValidTopic(t); err != nil {
			bad("topics", "%w", err)
		}
	}
	for _, re := range k.TopicRegexps {
		if _, err := regexp.Compile(re); err != nil {
			bad("topic_regexps", "%q: %w", re, err)
		}
	}
	if k.ConsumerGroup == "" {
		bad("consumer_group", "must not be empty")
	}
	switch strings.ToLower(k.Offset) {
	case "oldest", "newest":
	default:
		bad("offset", "must be \"oldest\" or \"newest\", got %q", k.Offset)
	}
	if _, ok := balancers[strings.ToLower(k.BalanceStrategy)]; !ok {
		bad("balance_strategy", "must be \"range\", \"roundrobin\" or \"sticky\", got %q", k.BalanceStrategy)
	}
	switch k.TimestampSource {
	case "", "metric", "inner", "outer":
	default:
		bad("timestamp_source", "must be \"metric\", \"inner\" or \"outer\", got %q", k.TimestampSource)
	}
	switch k.ConnectionStrategy {
	case "", "startup", "defer":
	default:
		bad("connection_strategy", "must be \"startup\" or \"defer\", got %q", k.ConnectionStrategy)
	}
	if k.MaxMessageLen < 0 {
		bad("max_message_len", "must not be negative, got %d", k.MaxMessageLen)
	}
	if k.MaxUndeliveredMessages < 1 {
		bad("max_undelivered_messages", "must be at least 1, got %d", k.MaxUndeliveredMessages)
	}
	if k.ConsumerFetchDefault < 0 || k.ConsumerFetchMin < 0 || k.ConsumerFetchMaxWait < 0 || k.CommitInterval < 0 {
		bad("consumer_fetch_default", "sizes and durations must not be negative")
	}
	if k.SessionTimeout < morse.Duration(time.Second) || k.RebalanceTimeout < morse.Duration(time.Second) {
		bad("session_timeout", "session_timeout and rebalance_timeout must be at least 1s")
	}
	errs = append(errs, k.ClientConfig.Validate(), k.Format.Validate())
	return errors.Join(errs...)
}

// balancers are the group balancers of balance_strategy, by Telegraf's names.
var balancers = map[string]func() kgo.GroupBalancer{
	"":           kgo.RangeBalancer,
	"range":      kgo.RangeBalancer,
	"roundrobin": kgo.RoundRobinBalancer,
	"sticky":     kgo.StickyBalancer,
}

// Init prepares the parser and logs once each option that is accepted but has no effect.
func (k *KafkaConsumer) Init() error {
	var err error
	if k.parse, err = newParser(&k.Format, nil); err != nil {
		return err
	}
	for _, w := range k.warnings() {
		k.logger().Warn("kafka_consumer: " + w)
	}
	return nil
}

// warnings name the options that Telegraf hands to sarama and franz-go has no use for.
func (k *KafkaConsumer) warnings() []string {
	w := k.ClientConfig.Warnings()
	if k.KafkaVersion != "" {
		w = append(w, "kafka_version has no effect: the client negotiates versions with each broker")
	}
	if k.CompressionCodec != 0 {
		w = append(w, "compression_codec has no effect on a consumer: messages say how they are compressed")
	}
	if k.MaxProcessingTime != nil {
		w = append(w, "max_processing_time has no effect: morse holds back the next poll, not a partition's session, while outputs catch up")
	}
	if k.ResolveCanonical {
		w = append(w, "resolve_canonical_bootstrap_servers_only has no effect: brokers are dialled by the names given")
	}
	if k.ConnectionStrategy != "" {
		w = append(w, "connection_strategy is deprecated in Telegraf and has no effect: the consumer always connects in the background and retries")
	}
	if k.TimestampSource == "outer" {
		w = append(w, "timestamp_source = \"outer\" uses the record's timestamp, which is the batch's for topics with LogAppendTime")
	}
	return w
}

// Gather does nothing: messages are read as they come.
func (k *KafkaConsumer) Gather(context.Context, morse.Accumulator) error { return nil }

// Start creates the client, which joins the group in the background, and starts reading.
// The accumulator must support delivery tracking (morse.DeliveryTracking), as the agent's
// does.
func (k *KafkaConsumer) Start(_ context.Context, acc morse.Accumulator) error {
	dt, ok := acc.(morse.DeliveryTracking)
	if !ok {
		return errors.New("kafka_consumer: the accumulator does not track deliveries")
	}
	if la, ok := acc.(morse.LineAccumulator); ok {
		// Line protocol the outputs write as it is need not be taken apart.
		parse, err := newParser(&k.Format, la.PrefersLines)
		if err != nil {
			return err
		}
		k.parse = parse
	}
	tacc := dt.WithTracking(k.MaxUndeliveredMessages)
	c := newConsumer(k, tacc)
	opts, err := k.clientOptions(c)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka_consumer: %w", err)
	}
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	k.mu.Lock()
	k.cl, k.cancel, k.c = cl, cancel, c
	k.mu.Unlock()
	k.wg.Go(func() { c.deliveries(ctx) })
	k.wg.Go(func() { c.commits(ctx) })
	k.wg.Go(func() { c.poll(ctx) })
	return nil
}

// Stop ends reading, commits what is done and leaves the group. Messages still in flight
// are not committed: the group reads them again.
func (k *KafkaConsumer) Stop() {
	k.mu.Lock()
	cl, cancel, c := k.cl, k.cancel, k.c
	k.cl, k.cancel, k.c = nil, nil, nil
	k.mu.Unlock()
	if cl == nil {
		return
	}
	cancel()
	k.wg.Wait()
	c.drainDeliveries() // what was reported meanwhile is committed too
	ctx, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	c.commitNow(ctx)
	c.stopping()
	cl.Close()
}

// clientOptions are the franz-go options of the configured consumer.
func (k *KafkaConsumer) clientOptions(c *consumer) ([]kgo.Opt, error) {
	opts, err := k.ClientConfig.Options(k.Brokers, k.logger())
	if err != nil {
		return nil, fmt.Errorf("kafka_consumer: %w", err)
	}
	reset := kgo.NewOffset().AtStart()
	if strings.EqualFold(k.Offset, "newest") {
		reset = kgo.NewOffset().AtEnd()
	}
	opts = append(opts,
		kgo.ConsumerGroup(k.ConsumerGroup),
		kgo.ConsumeResetOffset(reset),
		kgo.Balancers(balancers[strings.ToLower(k.BalanceStrategy)]()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(time.Duration(k.SessionTimeout)),
		kgo.HeartbeatInterval(min(3*time.Second, time.Duration(k.SessionTimeout)/3)),
		kgo.RebalanceTimeout(time.Duration(k.RebalanceTimeout)),
		// Rebalances wait while a poll's records are handed to the agent, so that the
		// revoke callback sees every message that was read from a revoked partition.
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.lost),
	)
	if len(k.TopicRegexps) > 0 {
		pats := append([]string(nil), k.TopicRegexps...)
		for _, t := range k.Topics {
			pats = append(pats, "^"+regexp.QuoteMeta(t)+"$")
		}
		opts = append(opts, kgo.ConsumeTopics(pats...), kgo.ConsumeRegex())
	} else {
		opts = append(opts, kgo.ConsumeTopics(k.Topics...))
	}
	if k.ConsumerFetchDefault > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(int32(min(int64(k.ConsumerFetchDefault), 1<<30))))
	}
	if k.ConsumerFetchMin > 0 {
		opts = append(opts, kgo.FetchMinBytes(int32(min(int64(k.ConsumerFetchMin), 1<<30))))
	}
	if k.ConsumerFetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(time.Duration(k.ConsumerFetchMaxWait)))
	}
	return append(opts, k.extraOpts...), nil
}
