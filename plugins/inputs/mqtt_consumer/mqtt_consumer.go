// Package mqtt_consumer is the MQTT input, with Telegraf's inputs.mqtt_consumer options: it
// subscribes to topics on a broker over MQTT 3.1.1 (Telegraf's protocol) or MQTT 5
// (protocol = "5", morse's), parses each message's payload with the data format asked for,
// tags its metrics with the topic and what topic_parsing takes from it, and adds them as one
// tracked group.
//
// A message is acknowledged to the broker only once its group is done: every output that
// took its metrics wrote them or dropped them for good (morse.TrackingAccumulator), and so
// is every message that came before it, since MQTT wants acknowledgements in order. With a
// persistent session and QoS 1 or 2, a message not yet acknowledged when the connection, the
// agent or the broker goes down is sent again, so nothing is lost (at least once). Telegraf
// acknowledges on receipt unless persistent_session is set; morse always waits, which is
// the same thing for a clean session (the broker forgets the session on disconnect anyway).
package mqtt_consumer

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/mqtt"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
	"github.com/morse-agent/morse/selfstat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Read metrics from MQTT topics, acknowledging each message once the outputs have it"

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "mqtt_consumer",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Format is the parser registry's config under a name of its own: the input embeds
// tlsclient.Config too, and a struct cannot embed two types called Config.
type Format = dataformat.Config

// Defaults, as Telegraf's.
const (
	DefaultMaxUndeliveredMessages = 1000
	DefaultConnectionTimeout      = 30 * time.Second
	DefaultMaxReconnectInterval   = 30 * time.Second
	DefaultKeepAlive              = 60 * time.Second
	DefaultPingTimeout            = 10 * time.Second
)

// MQTTConsumer reads metrics from an MQTT broker. The TOML keys are Telegraf's, so a
// Telegraf [[inputs.mqtt_consumer]] table decodes unchanged.
type MQTTConsumer struct {
	Servers                []string       `toml:"servers"`
	Topics                 []string       `toml:"topics"`
	TopicTag               *string        `toml:"topic_tag"`
	TopicParsing           []TopicParsing `toml:"topic_parsing"`
	Username               morse.Secret   `toml:"username"`
	Password               morse.Secret   `toml:"password"`
	QoS                    int            `toml:"qos"`
	ConnectionTimeout      morse.Duration `toml:"connection_timeout"`
	MaxReconnectInterval   morse.Duration `toml:"max_reconnect_interval"`
	KeepAlive              morse.Duration `toml:"keepalive"`
	PingTimeout            morse.Duration `toml:"ping_timeout"`
	MaxUndeliveredMessages int            `toml:"max_undelivered_messages"`
	PersistentSession      bool           `toml:"persistent_session"`
	ClientID               string         `toml:"client_id"`
	// ClientTrace is Telegraf's switch for the MQTT library's own messages; morse logs the
	// connection's changes and errors itself, so it has no effect.
	ClientTrace bool `toml:"client_trace"`
	// Protocol is morse's: "3.1.1" (the default, Telegraf's only one) or "5".
	Protocol string `toml:"protocol"`

	tlsclient.Config
	// Format is data_format and the options of each format's parser, with Telegraf's keys.
	Format

	log     *slog.Logger
	stats   *selfstat.PluginStats
	parser  parsers.Parser
	topics  []*topicParser
	tagName string

	mu sync.Mutex
	c  *consumer
}

// New returns a consumer with Telegraf's defaults.
func New() *MQTTConsumer {
	return &MQTTConsumer{
		Servers:                []string{"tcp://127.0.0.1:1883"},
		MaxUndeliveredMessages: DefaultMaxUndeliveredMessages,
		ConnectionTimeout:      morse.Duration(DefaultConnectionTimeout),
		MaxReconnectInterval:   morse.Duration(DefaultMaxReconnectInterval),
		KeepAlive:              morse.Duration(DefaultKeepAlive),
		PingTimeout:            morse.Duration(DefaultPingTimeout),
		Format:                 Format{DataFormat: "influx"},
	}
}

var (
	_ morse.ServiceInput = (*MQTTConsumer)(nil)
	_ morse.Validator    = (*MQTTConsumer)(nil)
	_ morse.Initializer  = (*MQTTConsumer)(nil)
	_ morse.LoggerSetter = (*MQTTConsumer)(nil)
	_ morse.StatsSetter  = (*MQTTConsumer)(nil)
)

// SetLogger sets the logger.
func (m *MQTTConsumer) SetLogger(l *slog.Logger) { m.log = l }

// SetStats sets the plugin's counters (internal_mqtt_consumer).
func (m *MQTTConsumer) SetStats(s *selfstat.PluginStats) { m.stats = s }

func (m *MQTTConsumer) logger() *slog.Logger {
	if m.log == nil {
		return slog.Default()
	}
	return m.log
}

// Validate checks the options after decoding, naming the key at fault.
func (m *MQTTConsumer) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, morse.Errorf(key, format, args...)) }
	if len(m.Servers) == 0 {
		bad("servers", "at least one server is needed, such as \"tcp://127.0.0.1:1883\"")
	} else if _, err := mqtt.ParseServers(m.Servers, false); err != nil {
		bad("servers", "%w", err)
	}
	if m.QoS < 0 || m.QoS > 2 {
		bad("qos", "must be 0, 1 or 2, got %d", m.QoS)
	}
	if m.PersistentSession && m.ClientID == "" {
		bad("persistent_session", "needs client_id: the broker keeps the session under that id")
	}
	if m.ConnectionTimeout < morse.Duration(time.Second) {
		bad("connection_timeout", "must be at least 1s, got %s", time.Duration(m.ConnectionTimeout))
	}
	if m.KeepAlive != 0 && m.KeepAlive < morse.Duration(time.Second) {
		bad("keepalive", "must be 0 (off) or at least 1s, got %s", time.Duration(m.KeepAlive))
	}
	if m.PingTimeout < 0 || m.MaxReconnectInterval < 0 {
		bad("ping_timeout", "ping_timeout and max_reconnect_interval must not be negative")
	}
	if m.MaxUndeliveredMessages < 1 {
		bad("max_undelivered_messages", "must be at least 1, got %d", m.MaxUndeliveredMessages)
	}
	for i := range m.TopicParsing {
		if _, err := m.TopicParsing[i].compile(); err != nil {
			bad("topic_parsing", "table %d: %w", i+1, err)
		}
	}
	errs = append(errs, mqtt.ValidProtocol(m.Protocol), m.Config.Validate(), m.Format.Validate())
	return errors.Join(errs...)
}

// Init builds the parser and the topic parsers.
func (m *MQTTConsumer) Init() error {
	p, err := m.NewParser(parsers.Settings{MetricName: "mqtt_consumer"})
	if err != nil {
		return err
	}
	m.parser = p
	m.topics = m.topics[:0]
	for i := range m.TopicParsing {
		tp, err := m.TopicParsing[i].compile()
		if err != nil {
			return morse.Errorf("topic_parsing", "table %d: %w", i+1, err)
		}
		m.topics = append(m.topics, tp)
	}
	m.tagName = "topic"
	if m.TopicTag != nil {
		m.tagName = *m.TopicTag
	}
	if len(m.Topics) == 0 {
		m.logger().Warn("mqtt_consumer: no topics: nothing is subscribed, and only a resumed session's messages come")
	}
	if m.ClientTrace {
		m.logger().Warn("mqtt_consumer: client_trace has no effect: morse logs the connection's changes itself")
	}
	return nil
}

// Gather does nothing: messages are read as they come.
func (m *MQTTConsumer) Gather(context.Context, morse.Accumulator) error { return nil }

// Start connects, subscribes and starts handing messages to the agent. The accumulator must
// support delivery tracking (morse.DeliveryTracking), as the agent's does. A broker that
// refuses the connection, for its credentials or otherwise, is an error that says so.
func (m *MQTTConsumer) Start(ctx context.Context, acc morse.Accumulator) error {
	dt, ok := acc.(morse.DeliveryTracking)
	if !ok {
		return errors.New("mqtt_consumer: the accumulator does not track deliveries")
	}
	if m.parser == nil {
		if err := m.Init(); err != nil {
			return err
		}
	}
	c := newConsumer(m, dt.WithTracking(m.MaxUndeliveredMessages))
	opts, err := m.clientOptions(c)
	if err != nil {
		return fmt.Errorf("mqtt_consumer: %w", err)
	}
	if _, err := mqtt.NewClient(opts, nil); err != nil {
		return fmt.Errorf("mqtt_consumer: %w", err)
	}
	c.run()
	if err := c.connect(ctx, opts); err != nil {
		if mqtt.Lasting(err) {
			c.stop()
			return fmt.Errorf("mqtt_consumer: %w", err)
		}
		// A broker not reachable yet is waited for, as a reconnect would.
		m.logger().Warn("mqtt_consumer: no connection yet; trying again in the background", "error", err)
		c.wg.Go(func() { c.reconnect(opts) })
	}
	m.mu.Lock()
	m.c = c
	m.mu.Unlock()
	return nil
}

// Stop disconnects. Messages still in flight are not acknowledged: on a persistent session
// the broker sends them again.
func (m *MQTTConsumer) Stop() {
	m.mu.Lock()
	c := m.c
	m.c = nil
	m.mu.Unlock()
	if c != nil {
		c.stop()
	}
}

func (m *MQTTConsumer) clientOptions(c *consumer) (mqtt.Options, error) {
	tlsCfg, err := m.TLSConfig()
	if err != nil {
		return mqtt.Options{}, err
	}
	servers, err := mqtt.ParseServers(m.Servers, tlsCfg != nil)
	if err != nil {
		return mqtt.Options{}, err
	}
	id := m.ClientID
	if id == "" {
		var b [5]byte
		_, _ = rand.Read(b[:])
		id = "Telegraf-Consumer-" + hex.EncodeToString(b[:]) // Telegraf's prefix
	}
	log := m.logger()
	return mqtt.Options{
		Servers: servers, Protocol: m.Protocol, ClientID: id,
		Username: string(m.Username), Password: string(m.Password), TLS: tlsCfg,
		KeepAlive: time.Duration(m.KeepAlive), PingTimeout: time.Duration(m.PingTimeout),
		ConnectTimeout:       time.Duration(m.ConnectionTimeout),
		MaxReconnectInterval: time.Duration(m.MaxReconnectInterval),
		Persistent:           m.PersistentSession,
		OnMessage:            c.onMessage, Topics: m.Topics, QoS: byte(m.QoS),
		OnConnect: func() { log.Info("mqtt_consumer: connected", "servers", m.Servers) },
		OnConnectionLost: func(err error) {
			c.errs.Log(log, slog.LevelWarn, "mqtt_consumer: connection lost; reconnecting", "servers", m.Servers, "error", err)
		},
		Log: log,
	}, nil
}
