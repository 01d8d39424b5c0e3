package mqtt

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// v5 is the MQTT 5 client, eclipse/paho.golang's autopaho connection manager.
type v5 struct {
	o     Options
	cfg   autopaho.ClientConfig
	props *paho.PublishProperties

	mu      sync.Mutex
	cm      *autopaho.ConnectionManager
	cancel  context.CancelFunc
	lastErr error // the last failed connection attempt, for Connect's error

	subscribed chan struct{} // closed once the first connection's subscription is answered
	once       sync.Once
	failed     chan struct{} // closed at the first failed connection attempt
	failOnce   sync.Once
}

func newV5(o Options, pp *PublishProperties) *v5 {
	c := &v5{o: o, props: publishProperties(pp), subscribed: make(chan struct{}), failed: make(chan struct{})}
	cfg := autopaho.ClientConfig{
		ServerUrls:                    o.Servers,
		TlsCfg:                        o.TLS,
		KeepAlive:                     uint16(min(o.KeepAlive/time.Second, math.MaxUint16)),
		CleanStartOnInitialConnection: !o.Persistent,
		ConnectTimeout:                o.ConnectTimeout,
		ConnectUsername:               o.Username,
		ConnectPassword:               []byte(o.Password),
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			if o.OnMessage != nil {
				go func() { // the callback must not block
					c.subscribe(cm)
					c.once.Do(func() { close(c.subscribed) })
				}()
			}
			if o.OnConnect != nil {
				o.OnConnect()
			}
		},
		OnConnectionDown: func() bool {
			if o.OnConnectionLost != nil {
				o.OnConnectionLost(errors.New("connection lost"))
			}
			return true
		},
		OnConnectError: func(err error) {
			c.mu.Lock()
			c.lastErr = err
			c.mu.Unlock()
			c.failOnce.Do(func() { close(c.failed) })
		},
	}
	if o.Persistent {
		// MQTT 5 ends a session when its connection closes unless told otherwise; 3.1.1's
		// persistent session never expires, and so does this one.
		cfg.SessionExpiryInterval = math.MaxUint32
	}
	maxDelay := o.MaxReconnectInterval
	if maxDelay <= time.Second {
		maxDelay = 30 * time.Second
	}
	cfg.ReconnectBackoff = autopaho.NewExponentialBackoff(100*time.Millisecond, maxDelay, time.Second, 2)
	cfg.ClientID = o.ClientID
	// The plugin acknowledges (Message.Ack); paho.golang sends acknowledgements in the
	// order the messages came, whatever the order of the calls.
	cfg.EnableManualAcknowledgment = true
	cfg.SendAcksInterval = 10 * time.Millisecond
	if o.OnMessage != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){c.onMessage}
	}
	c.cfg = cfg
	return c
}

func publishProperties(pp *PublishProperties) *paho.PublishProperties {
	if pp == nil {
		return nil
	}
	p := &paho.PublishProperties{ContentType: pp.ContentType, ResponseTopic: pp.ResponseTopic, TopicAlias: pp.TopicAlias}
	if s := uint32(min(pp.MessageExpiry/time.Second, math.MaxUint32)); s > 0 {
		p.MessageExpiry = &s
	}
	for _, k := range sortedKeys(pp.UserProperties) {
		p.User.Add(k, pp.UserProperties[k])
	}
	return p
}

func (c *v5) onMessage(pr paho.PublishReceived) (bool, error) {
	p, cl := pr.Packet, pr.Client
	c.o.OnMessage(&Message{Topic: p.Topic, Payload: p.Payload, QoS: p.QoS, Duplicate: p.Duplicate(), ack: func() {
		if err := cl.Ack(p); err != nil {
			c.o.Log.Debug("mqtt: acknowledgement not sent", "error", err)
		}
	}})
	return true, nil
}

func (c *v5) subscribe(cm *autopaho.ConnectionManager) {
	if len(c.o.Topics) == 0 {
		return
	}
	s := &paho.Subscribe{}
	for _, t := range c.o.Topics {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: t, QoS: c.o.QoS})
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	defer cancel()
	ack, err := cm.Subscribe(ctx, s)
	if err != nil {
		c.o.Log.Error("mqtt: subscription failed; it is made again on the next connection", "topics", c.o.Topics, "error", err)
		return
	}
	for i, code := range ack.Reasons {
		if code >= 0x80 && i < len(c.o.Topics) {
			c.o.Log.Error("mqtt: the broker refused the subscription", "topic", c.o.Topics[i], "reason_code", code)
		}
	}
}

func (c *v5) timeout() time.Duration {
	if c.o.ConnectTimeout > 0 {
		return c.o.ConnectTimeout
	}
	return 30 * time.Second
}

// Connect starts the connection manager and waits for its first connection. As with
// paho.mqtt.golang, the first failed attempt ends it, with the broker's reason for a
// refusal; afterwards autopaho reconnects on its own.
func (c *v5) Connect(ctx context.Context) error {
	mctx, cancel := context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(mctx, c.cfg)
	if err != nil {
		cancel()
		return fmt.Errorf("connecting to %s: %w", servers(c.o.Servers), err)
	}
	wctx, done := context.WithTimeout(ctx, c.timeout())
	defer done()
	actx, stop := context.WithCancel(wctx)
	defer stop()
	go func() {
		select {
		case <-c.failed:
			stop()
		case <-actx.Done():
		}
	}()
	if err := cm.AwaitConnection(actx); err != nil {
		cancel()
		<-cm.Done()
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		if last == nil {
			return fmt.Errorf("connecting to %s: %w", servers(c.o.Servers), err)
		}
		var ce *autopaho.ConnackError
		if errors.As(last, &ce) {
			if ce.ReasonCode == 0x86 || ce.ReasonCode == 0x87 { // bad user name or password, not authorized
				return fmt.Errorf("connecting to %s: %w: %w (%w)", servers(c.o.Servers), ErrRefused, ErrNotAuthorized, last)
			}
			return fmt.Errorf("connecting to %s: %w: %w", servers(c.o.Servers), ErrRefused, last)
		}
		return fmt.Errorf("connecting to %s: %w", servers(c.o.Servers), last)
	}
	c.mu.Lock()
	c.cm, c.cancel = cm, cancel
	c.mu.Unlock()
	if c.o.OnMessage != nil {
		// Start returns once the subscription stands: a message published after it is read.
		select {
		case <-c.subscribed:
		case <-wctx.Done():
		}
	}
	return nil
}

// Publish sends one message; a broker's reason code of 0x80 or more refuses it for good,
// except "not authorized" (0x87), which an operator can fix.
func (c *v5) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	c.mu.Lock()
	cm := c.cm
	c.mu.Unlock()
	if cm == nil {
		return publishError(errors.New("not connected"), false, false)
	}
	resp, err := cm.Publish(ctx, &paho.Publish{Topic: topic, QoS: qos, Retain: retain, Payload: payload, Properties: c.props})
	if err == nil {
		return nil
	}
	err = fmt.Errorf("publishing to %q: %w", topic, err)
	switch {
	case resp != nil && resp.ReasonCode == 0x87:
		return publishError(err, false, true)
	case resp != nil && resp.ReasonCode >= 0x80:
		return publishError(err, true, false)
	case errors.Is(err, paho.ErrInvalidArguments):
		return publishError(err, true, false)
	}
	return publishError(err, false, false)
}

// Close disconnects and stops the connection manager.
func (c *v5) Close() error {
	c.mu.Lock()
	cm, cancel := c.cm, c.cancel
	c.cm, c.cancel = nil, nil
	c.mu.Unlock()
	if cm == nil {
		return nil
	}
	// paho.golang sends manual acknowledgements every SendAcksInterval: give the last
	// ones their turn, or the broker sends those messages again.
	time.Sleep(3 * c.cfg.SendAcksInterval)
	ctx, done := context.WithTimeout(context.Background(), time.Second)
	defer done()
	_ = cm.Disconnect(ctx) // the connection may be down already; Done follows either way
	cancel()
	<-cm.Done()
	return nil
}
