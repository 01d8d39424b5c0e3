// Package mqtt is what the MQTT input and output share: one small client over the two Eclipse
// Paho libraries, eclipse/paho.mqtt.golang for MQTT 3.1.1 and eclipse/paho.golang (autopaho)
// for MQTT 5. Neither library speaks both protocols, and both are the Eclipse project's
// maintained clients, which Telegraf also uses; a plugin picks one with Telegraf's
// protocol = "3.1.1" or "5" and sees the same Client either way.
//
// Received messages are acknowledged by the plugin (Message.Ack), never by the library on
// receipt, so that the input acknowledges a QoS 1 or 2 message only once its metrics are
// done. It lives under plugins/common because plugin structs embed its option types.
package mqtt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Protocols, as Telegraf names them.
const (
	Protocol311 = "3.1.1"
	Protocol5   = "5"
)

// Options configure one client. Durations of zero take the library's defaults.
type Options struct {
	Servers  []*url.URL // parsed by ParseServers
	Protocol string     // Protocol311 (also when empty) or Protocol5
	ClientID string
	Username string
	Password string
	TLS      *tls.Config // nil: plain TCP unless a server's scheme asks for TLS
	// KeepAlive is rounded down to whole seconds, as MQTT counts it.
	KeepAlive            time.Duration
	PingTimeout          time.Duration // MQTT 3.1.1 only; paho.golang waits one keep-alive
	ConnectTimeout       time.Duration
	MaxReconnectInterval time.Duration
	// Persistent keeps the session at the broker across connections (clean session off in
	// 3.1.1, clean start off and a session that never expires in 5), so that QoS 1 and 2
	// messages not yet acknowledged are sent again after a reconnect or a restart.
	Persistent bool
	// OnMessage, when set, receives every message; the client subscribes Topics at QoS on
	// each connection. It is called from the library's one receiving goroutine, in order:
	// while it blocks, the client reads nothing more.
	OnMessage func(*Message)
	Topics    []string
	QoS       byte
	// OnConnect and OnConnectionLost report the connection's changes; they must not block.
	OnConnect        func()
	OnConnectionLost func(error)
	Log              *slog.Logger
}

// Message is one received PUBLISH.
type Message struct {
	Topic     string
	Payload   []byte
	QoS       byte
	Duplicate bool
	ack       func()
}

// Ack acknowledges the message to the broker (PUBACK for QoS 1, PUBREC for QoS 2; nothing
// for QoS 0). Acknowledgements must be made in the order the messages came, as MQTT asks;
// one made after the connection it came on was lost is not sent, and the broker sends the
// message again on a persistent session.
func (m *Message) Ack() {
	if m.ack != nil {
		m.ack()
	}
}

// PublishProperties are MQTT 5's properties of a PUBLISH (Telegraf's [outputs.mqtt.v5]).
type PublishProperties struct {
	ContentType    string
	ResponseTopic  string
	MessageExpiry  time.Duration
	TopicAlias     *uint16
	UserProperties map[string]string
}

// Client is a connection to one broker of Servers, kept up by the library.
type Client interface {
	// Connect makes the first connection and subscribes, within ctx; the library
	// reconnects on its own afterwards. A refusal names the broker's reason.
	Connect(ctx context.Context) error
	// Publish sends one message and, at QoS 1 or 2, waits for the broker's
	// acknowledgement or for ctx. Its errors are classified (morse.RetryableError or
	// morse.PermanentError).
	Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error
	// Close disconnects. Messages received and not acknowledged stay at the broker.
	Close() error
}

// NewClient returns a client of the protocol asked for, not yet connected.
func NewClient(o Options, props *PublishProperties) (Client, error) {
	if len(o.Servers) == 0 {
		return nil, errors.New("no servers")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	switch o.Protocol {
	case "", Protocol311:
		return newV3(o), nil
	case Protocol5:
		return newV5(o, props), nil
	}
	return nil, fmt.Errorf("unsupported protocol %q: must be %q or %q", o.Protocol, Protocol311, Protocol5)
}

// ValidProtocol checks protocol's value, for a plugin's Validate.
func ValidProtocol(p string) error {
	switch p {
	case "", Protocol311, Protocol5:
		return nil
	}
	return morse.Errorf("protocol", "must be %q or %q, got %q", Protocol311, Protocol5, p)
}

// ParseServers reads Telegraf's servers: URLs with a scheme of tcp, mqtt, ssl, tls or mqtts
// (ws and wss too), or host:port, which Telegraf still takes and reads as tcp:// (as ssl://
// when useTLS).
func ParseServers(servers []string, useTLS bool) ([]*url.URL, error) {
	out := make([]*url.URL, 0, len(servers))
	for _, s := range servers {
		if !strings.Contains(s, "://") {
			scheme := "tcp"
			if useTLS {
				scheme = "ssl"
			}
			s = scheme + "://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", s, err)
		}
		switch strings.ToLower(u.Scheme) {
		case "tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss":
		default:
			return nil, fmt.Errorf("server %q: unsupported scheme %q (use tcp, mqtt, ssl, tls, mqtts, ws or wss)", s, u.Scheme)
		}
		if u.Port() == "" {
			return nil, fmt.Errorf("server %q: no port", s)
		}
		out = append(out, u)
	}
	return out, nil
}

// ErrRefused is wrapped by the error of a connection the broker refused (CONNACK with an
// error code), with the broker's reason; ErrNotAuthorized by those it refused for the
// credentials.
var (
	ErrRefused       = errors.New("the broker refused the connection")
	ErrNotAuthorized = errors.New("not authorized: check username and password")
)

// Lasting reports whether err of Connect will not go away by trying again: the broker
// refused the connection (its credentials, its protocol, its client id), or the server's
// certificate was not trusted. Other errors, such as a broker not yet listening, may.
func Lasting(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.Is(err, ErrRefused) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

// servers names the brokers, for errors.
func servers(us []*url.URL) string {
	s := make([]string, len(us))
	for i, u := range us {
		c := *u
		c.User = nil
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

// publishError classifies err of a publish: a broker's refusal of the message is permanent,
// anything about the connection retryable.
func publishError(err error, permanent bool, unauthorized bool) error {
	switch {
	case unauthorized:
		return morse.Retryable(fmt.Errorf("%w: %w", morse.ErrUnauthorized, err), 0)
	case permanent:
		return morse.Permanent(morse.ReasonPermanent, err)
	}
	return morse.Retryable(err, 0)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
