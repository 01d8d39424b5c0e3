package mqtt

import (
	"context"
	"fmt"
	"sync"
	"time"

	paho3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// v3 is the MQTT 3.1.1 client, eclipse/paho.mqtt.golang.
type v3 struct {
	o          Options
	cl         paho3.Client
	subscribed chan struct{} // closed once the first connection's subscription is answered
	once       sync.Once
}

func newV3(o Options) *v3 {
	c := &v3{o: o, subscribed: make(chan struct{})}
	po := paho3.NewClientOptions()
	for _, u := range o.Servers {
		po.AddBroker(u.String())
	}
	po.SetClientID(o.ClientID)
	po.SetUsername(o.Username)
	po.SetPassword(o.Password)
	if o.TLS != nil {
		po.SetTLSConfig(o.TLS)
	}
	if o.KeepAlive > 0 {
		po.SetKeepAlive(o.KeepAlive)
	}
	if o.PingTimeout > 0 {
		po.SetPingTimeout(o.PingTimeout)
	}
	if o.ConnectTimeout > 0 {
		po.SetConnectTimeout(o.ConnectTimeout)
	}
	if o.MaxReconnectInterval > 0 {
		po.SetMaxReconnectInterval(o.MaxReconnectInterval)
	}
	po.SetAutoReconnect(true)
	po.SetCleanSession(!o.Persistent)
	// The plugin acknowledges (Message.Ack); the library would on return of the handler.
	po.SetAutoAckDisabled(true)
	po.SetOrderMatters(true)
	if o.OnMessage != nil {
		// Messages of a resumed session may come before the subscription is made again.
		po.SetDefaultPublishHandler(c.onMessage)
	}
	po.SetOnConnectHandler(func(paho3.Client) {
		if o.OnMessage != nil {
			go func() { // the handler must not wait for the SUBACK it would read
				c.subscribe()
				c.once.Do(func() { close(c.subscribed) })
			}()
		}
		if o.OnConnect != nil {
			o.OnConnect()
		}
	})
	po.SetConnectionLostHandler(func(_ paho3.Client, err error) {
		if o.OnConnectionLost != nil {
			o.OnConnectionLost(err)
		}
	})
	c.cl = paho3.NewClient(po)
	return c
}

func (c *v3) onMessage(_ paho3.Client, m paho3.Message) {
	c.o.OnMessage(&Message{Topic: m.Topic(), Payload: m.Payload(), QoS: m.Qos(), Duplicate: m.Duplicate(), ack: m.Ack})
}

// subscribe subscribes the topics and logs a refusal: it runs on every connection, and a
// refused filter is a problem of the config that a reconnect does not change.
func (c *v3) subscribe() {
	if len(c.o.Topics) == 0 {
		return
	}
	filters := make(map[string]byte, len(c.o.Topics))
	for _, t := range c.o.Topics {
		filters[t] = c.o.QoS
	}
	tok := c.cl.SubscribeMultiple(filters, nil)
	if !tok.WaitTimeout(c.timeout()) {
		c.o.Log.Warn("mqtt: no answer to the subscription; it is made again on the next connection", "topics", c.o.Topics)
		return
	}
	if err := tok.Error(); err != nil {
		c.o.Log.Error("mqtt: subscription failed", "topics", c.o.Topics, "error", err)
		return
	}
	if st, ok := tok.(*paho3.SubscribeToken); ok {
		for topic, code := range st.Result() {
			if code == 0x80 {
				c.o.Log.Error("mqtt: the broker refused the subscription", "topic", topic)
			}
		}
	}
}

func (c *v3) timeout() time.Duration {
	if c.o.ConnectTimeout > 0 {
		return c.o.ConnectTimeout
	}
	return 30 * time.Second
}

// Connect makes the first connection. paho.mqtt.golang tries each server once and reports
// the last failure; a CONNACK's refusal is named.
func (c *v3) Connect(ctx context.Context) error {
	tok := c.cl.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		c.cl.Disconnect(0)
		return fmt.Errorf("connecting to %s: %w", servers(c.o.Servers), ctx.Err())
	}
	if err := tok.Error(); err != nil {
		if ct, ok := tok.(*paho3.ConnectToken); ok {
			switch ct.ReturnCode() {
			case packets.ErrRefusedNotAuthorised, packets.ErrRefusedBadUsernameOrPassword:
				return fmt.Errorf("connecting to %s: %w: %w (%w)", servers(c.o.Servers), ErrRefused, ErrNotAuthorized, err)
			case packets.Accepted, packets.ErrNetworkError:
			default:
				return fmt.Errorf("connecting to %s: %w: %w", servers(c.o.Servers), ErrRefused, err)
			}
		}
		return fmt.Errorf("connecting to %s: %w", servers(c.o.Servers), err)
	}
	if c.o.OnMessage != nil {
		// Start returns once the subscription stands: a message published after it is read.
		select {
		case <-c.subscribed:
		case <-ctx.Done():
		}
	}
	return nil
}

// Publish sends one message. A message not yet acknowledged when ctx ends is retried by the
// caller; paho.mqtt.golang may also send it again after a reconnect, so the broker may get
// it twice, as at-least-once allows.
func (c *v3) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	tok := c.cl.Publish(topic, qos, retain, payload)
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return publishError(fmt.Errorf("publishing to %q: no acknowledgement: %w", topic, ctx.Err()), false, false)
	}
	if err := tok.Error(); err != nil {
		return publishError(fmt.Errorf("publishing to %q: %w", topic, err), false, false)
	}
	return nil
}

// Close disconnects, giving the library 250 ms to send what it holds.
func (c *v3) Close() error {
	if c.cl.IsConnectionOpen() || c.cl.IsConnected() {
		c.cl.Disconnect(250)
	}
	return nil
}
