// Package mqtt is the MQTT output, with Telegraf's outputs.mqtt options: metrics are
// published over MQTT 3.1.1 or 5 to topics made from a template per metric, in one of
// Telegraf's layouts (a message per metric, a message per topic, a message per field, or
// Homie v4), at the QoS and with the retain flag asked for.
//
// At QoS 1 and 2 a write succeeds once the broker has acknowledged every message. A
// message the connection lost is retried with the whole batch, so the broker may get some
// twice (at least once); a message the broker refused (an MQTT 5 reason code) drops the
// metrics it held, counted.
package mqtt

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/mqtt"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/serializers"
	"github.com/morse-agent/morse/plugins/serializers/dataformat"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Publish metrics to an MQTT broker, on topics made per metric"

func init() {
	morse.RegisterOutput(morse.OutputInfo{
		Name:         "mqtt",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Output { return New() },
	})
}

// Format is the serializer registry's config under a name of its own: the output embeds
// tlsclient.Config too, and a struct cannot embed two types called Config.
type Format = dataformat.Config

// Defaults, as Telegraf's.
const (
	DefaultTopic     = `telegraf/{{ .Tag "host" }}/{{ .Name }}`
	DefaultKeepAlive = 30
	DefaultTimeout   = 5 * time.Second
)

// MQTT publishes metrics to a broker. The TOML keys are Telegraf's, so a Telegraf
// [[outputs.mqtt]] table decodes unchanged.
type MQTT struct {
	Servers           []string       `toml:"servers"`
	Protocol          string         `toml:"protocol"`
	Topic             string         `toml:"topic"`
	Layout            string         `toml:"layout"`
	HomieDeviceName   string         `toml:"homie_device_name"`
	HomieNodeID       string         `toml:"homie_node_id"`
	Username          morse.Secret   `toml:"username"`
	Password          morse.Secret   `toml:"password"`
	Timeout           morse.Duration `toml:"timeout"`
	ConnectionTimeout morse.Duration `toml:"connection_timeout"`
	QoS               int            `toml:"qos"`
	ClientID          string         `toml:"client_id"`
	Retain            bool           `toml:"retain"`
	// KeepAlive is in seconds, as Telegraf's keep_alive; 0 turns it off.
	KeepAlive         int64 `toml:"keep_alive"`
	PersistentSession bool  `toml:"persistent_session"`
	// V5 are MQTT 5's publish properties ([outputs.mqtt.v5]); protocol "5" only.
	V5 *PublishProperties `toml:"v5"`
	// ClientTrace is accepted for Telegraf's configs and has no effect.
	ClientTrace bool `toml:"client_trace"`

	tlsclient.Config
	// Format is data_format and the options of each format, with Telegraf's keys.
	Format

	log     *slog.Logger
	ser     serializers.Serializer
	topic   *template.Template
	homie   homie
	dropLog *throttle.Throttle

	mu sync.Mutex
	cl mqtt.Client
}

// PublishProperties is Telegraf's [outputs.mqtt.v5] table.
type PublishProperties struct {
	ContentType    string            `toml:"content_type"`
	ResponseTopic  string            `toml:"response_topic"`
	MessageExpiry  morse.Duration    `toml:"message_expiry"`
	TopicAlias     *uint16           `toml:"topic_alias"`
	UserProperties map[string]string `toml:"user_properties"`
}

// New returns an output with Telegraf's defaults.
func New() *MQTT {
	return &MQTT{
		Servers:   []string{"localhost:1883"},
		Topic:     DefaultTopic,
		KeepAlive: DefaultKeepAlive,
		Timeout:   morse.Duration(DefaultTimeout),
		Format:    Format{DataFormat: "influx"},
		dropLog:   throttle.New(30 * time.Second),
	}
}

var (
	_ morse.Output         = (*MQTT)(nil)
	_ morse.Validator      = (*MQTT)(nil)
	_ morse.Initializer    = (*MQTT)(nil)
	_ morse.LoggerSetter   = (*MQTT)(nil)
	_ morse.WriteTimeouter = (*MQTT)(nil)
)

// SetLogger sets the logger.
func (m *MQTT) SetLogger(l *slog.Logger) { m.log = l }

func (m *MQTT) logger() *slog.Logger {
	if m.log == nil {
		return slog.Default()
	}
	return m.log
}

// Telegraf's old names in templates: .PluginName is the metric's name, .Hostname its host tag.
var (
	pluginNameRe = regexp.MustCompile(`({{.*\B)\.PluginName(\b[^}]*}})`)
	hostnameRe   = regexp.MustCompile(`({{.*\B)\.Hostname(\b[^}]*}})`)
)

func parseTemplate(key, text string) (*template.Template, error) {
	text = hostnameRe.ReplaceAllString(text, `$1.Tag "host"$2`)
	text = pluginNameRe.ReplaceAllString(text, `$1.Name$2`)
	t, err := template.New(key).Parse(text)
	if err != nil {
		return nil, morse.Errorf(key, "%w", err)
	}
	return t, nil
}

// Validate checks the options after decoding, naming the key at fault.
func (m *MQTT) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) { errs = append(errs, morse.Errorf(key, format, args...)) }
	if len(m.Servers) == 0 {
		bad("servers", "at least one server is needed, such as \"localhost:1883\"")
	} else if _, err := mqtt.ParseServers(m.Servers, false); err != nil {
		bad("servers", "%w", err)
	}
	if m.QoS < 0 || m.QoS > 2 {
		bad("qos", "must be 0, 1 or 2, got %d", m.QoS)
	}
	if m.PersistentSession && m.ClientID == "" {
		bad("persistent_session", "needs client_id: the broker keeps the session under that id")
	}
	if _, err := parseTemplate("topic", m.Topic); err != nil {
		errs = append(errs, err)
	}
	for _, p := range strings.Split(m.Topic, "/") {
		if strings.ContainsAny(p, "#+") {
			bad("topic", "%q: the wildcards + and # may not appear in a topic name", p)
		}
	}
	switch m.Layout {
	case "", "non-batch", "batch", "field":
	case "homie-v4":
		if m.HomieDeviceName == "" {
			bad("homie_device_name", "is needed with layout = \"homie-v4\"")
		}
		if m.HomieNodeID == "" {
			bad("homie_node_id", "is needed with layout = \"homie-v4\"")
		}
	default:
		bad("layout", "must be \"non-batch\", \"batch\", \"field\" or \"homie-v4\", got %q", m.Layout)
	}
	if m.Timeout <= 0 {
		bad("timeout", "must be positive: it bounds the wait for the broker's acknowledgement")
	}
	if m.KeepAlive < 0 {
		bad("keep_alive", "must not be negative, got %d", m.KeepAlive)
	}
	errs = append(errs, mqtt.ValidProtocol(m.Protocol), m.Config.Validate(), m.Format.Validate())
	return errors.Join(errs...)
}

// Init builds the serializer and the templates.
func (m *MQTT) Init() error {
	var err error
	if m.ser, err = m.Format.New(); err != nil {
		return err
	}
	if m.topic, err = parseTemplate("topic", m.Topic); err != nil {
		return err
	}
	if m.Layout == "homie-v4" {
		if err := m.homie.init(m.HomieDeviceName, m.HomieNodeID); err != nil {
			return err
		}
	}
	if m.V5 != nil && m.Protocol != mqtt.Protocol5 {
		m.logger().Warn("mqtt: [outputs.mqtt.v5] has no effect unless protocol = \"5\"")
	}
	if m.ClientTrace {
		m.logger().Warn("mqtt: client_trace has no effect: morse logs the connection's changes itself")
	}
	if m.dropLog == nil {
		m.dropLog = throttle.New(30 * time.Second)
	}
	return nil
}

// WriteTimeout bounds one write: each message waits up to timeout for its acknowledgement,
// and a batch holds many, so the write as a whole has a minute more.
func (m *MQTT) WriteTimeout() time.Duration { return time.Duration(m.Timeout) + time.Minute }

// Connect makes the connection; the library reconnects on its own afterwards.
func (m *MQTT) Connect(ctx context.Context) error {
	if m.ser == nil {
		if err := m.Init(); err != nil {
			return err
		}
	}
	o, err := m.clientOptions()
	if err != nil {
		return fmt.Errorf("mqtt: %w", err)
	}
	var props *mqtt.PublishProperties
	if v := m.V5; v != nil && m.Protocol == mqtt.Protocol5 {
		props = &mqtt.PublishProperties{ContentType: v.ContentType, ResponseTopic: v.ResponseTopic,
			MessageExpiry: time.Duration(v.MessageExpiry), TopicAlias: v.TopicAlias, UserProperties: v.UserProperties}
	}
	cl, err := mqtt.NewClient(o, props)
	if err != nil {
		return fmt.Errorf("mqtt: %w", err)
	}
	if err := cl.Connect(ctx); err != nil {
		return fmt.Errorf("mqtt: %w", err)
	}
	m.mu.Lock()
	old := m.cl
	m.cl = cl
	m.homie.reset()
	m.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

func (m *MQTT) clientOptions() (mqtt.Options, error) {
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
		id = "Telegraf-Output-" + randomID() // Telegraf's prefix
	}
	log := m.logger()
	return mqtt.Options{
		Servers: servers, Protocol: m.Protocol, ClientID: id, TLS: tlsCfg,
		Username: string(m.Username), Password: string(m.Password),
		KeepAlive: time.Duration(m.KeepAlive) * time.Second, ConnectTimeout: time.Duration(m.ConnectionTimeout),
		Persistent: m.PersistentSession,
		OnConnectionLost: func(err error) {
			m.dropLog.Log(log, slog.LevelWarn, "mqtt: connection lost; reconnecting", "servers", m.Servers, "error", err)
		},
		Log: log,
	}, nil
}

// Close publishes the Homie devices' state "lost" (Telegraf's choice: the will message
// would have to name the devices at connect time, before any is known) and disconnects.
func (m *MQTT) Close() error {
	m.mu.Lock()
	cl := m.cl
	m.cl = nil
	lost := m.homie.lost()
	m.mu.Unlock()
	if cl == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(m.Timeout))
	defer cancel()
	for _, msg := range lost {
		_ = cl.Publish(ctx, msg.topic, msg.payload, byte(m.QoS), m.Retain)
	}
	return cl.Close()
}
