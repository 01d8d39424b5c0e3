package mqtt_consumer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/mqtt"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/selfstat"
)

// consumer is one run of the input, from Start to Stop: the library's receiving goroutine
// hands it each message (onMessage), which waits while max_undelivered_messages are in
// flight; the delivery loop learns from the agent which messages are done and acknowledges
// them in the order they came.
type consumer struct {
	m    *MQTTConsumer
	acc  morse.TrackingAccumulator
	cl   mqtt.Client
	log  *slog.Logger
	errs *throttle.Throttle

	received, payloadSize, parseErrors, topicErrors, undelivered *selfstat.Counter

	room   chan struct{} // one token per message in flight
	stopCh chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	queue    []*entry // messages in flight, in the order they came
	inflight map[morse.TrackingID]*entry
	early    map[morse.TrackingID]bool // reported done before AddTrackingMetricGroup returned
}

// entry is one message in flight.
type entry struct {
	msg  *mqtt.Message
	done bool
}

func newConsumer(m *MQTTConsumer, acc morse.TrackingAccumulator) *consumer {
	st := m.stats
	if st == nil {
		st = selfstat.NewPluginStats(nil, "internal_mqtt_consumer", nil)
	}
	return &consumer{
		m: m, acc: acc, log: m.logger(), errs: throttle.New(30 * time.Second),
		// Telegraf's internal_mqtt_consumer fields, and morse's counts of what was refused.
		received: st.Counter("messages_received"), payloadSize: st.Counter("payload_size"),
		parseErrors: st.Counter("parse_errors"), topicErrors: st.Counter("topic_parsing_errors"),
		undelivered: st.Counter("undelivered_messages"),
		room:        make(chan struct{}, m.MaxUndeliveredMessages),
		stopCh:      make(chan struct{}),
		inflight:    map[morse.TrackingID]*entry{}, early: map[morse.TrackingID]bool{},
	}
}

// run starts the delivery loop.
func (c *consumer) run() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case d := <-c.acc.Delivered():
				c.delivered(d)
			}
		}
	})
}

// connect makes a client and its first connection.
func (c *consumer) connect(ctx context.Context, opts mqtt.Options) error {
	cl, err := mqtt.NewClient(opts, nil)
	if err != nil {
		return err
	}
	if err := cl.Connect(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.cl = cl
	c.mu.Unlock()
	return nil
}

// reconnect tries the first connection again until it is made or the input stops, waiting
// longer each time up to max_reconnect_interval, as the library does after a connection is
// lost.
func (c *consumer) reconnect(opts mqtt.Options) {
	wait := time.Second
	for {
		select {
		case <-c.stopCh:
			return
		case <-time.After(wait):
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-c.stopCh:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := c.connect(ctx, opts)
		cancel()
		if err == nil {
			return
		}
		c.errs.Log(c.log, slog.LevelWarn, "mqtt_consumer: connection failed; trying again", "error", err)
		wait = min(2*wait, max(time.Duration(c.m.MaxReconnectInterval), time.Second))
	}
}

// stop lets a waiting onMessage go (its message is not acknowledged), disconnects, and ends
// the delivery loop. What is still in flight stays unacknowledged.
func (c *consumer) stop() {
	close(c.stopCh)
	c.cancel()
	c.wg.Wait() // the reconnect loop too, so that no client is made after this
	c.mu.Lock()
	cl := c.cl
	c.mu.Unlock()
	if cl != nil {
		_ = cl.Close()
	}
}

// onMessage turns one message into metrics and adds them as one tracked group. A message
// that yields no metric is a group too, empty, so that it is acknowledged in its turn.
func (c *consumer) onMessage(msg *mqtt.Message) {
	select {
	case c.room <- struct{}{}:
	case <-c.stopCh:
		return
	}
	c.received.Incr()
	c.payloadSize.Add(int64(len(msg.Payload)))
	var ms []morse.Metric
	if err := c.m.parser.Parse(msg.Payload, func(m morse.Metric) { ms = append(ms, m) }); err != nil {
		c.parseErrors.Add(int64(max(parsers.Refused(err), 1))) // each refused entry
		c.errs.Log(c.log, slog.LevelError, "mqtt_consumer: message not fully parsed; the rest is kept",
			"topic", msg.Topic, "error", err)
	}
	ms = c.decorate(msg.Topic, ms)
	e := &entry{msg: msg}
	c.mu.Lock()
	c.queue = append(c.queue, e)
	c.mu.Unlock()
	// The agent may report the group done before it returns its id, so the lock is not
	// held meanwhile and such an early report waits in c.early.
	id := c.acc.AddTrackingMetricGroup(ms)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.early[id] {
		delete(c.early, id)
		c.finish(e)
		return
	}
	c.inflight[id] = e
	c.undelivered.Set(int64(len(c.inflight)))
}

// decorate adds topic_tag and applies topic_parsing. A field of the topic that does not
// convert to its type drops the message's metrics, as in Telegraf, counted under
// topic_parsing_errors.
func (c *consumer) decorate(topic string, ms []morse.Metric) []morse.Metric {
	tag := c.m.tagName
	for i := range ms {
		if tag != "" {
			ms[i] = ms[i].WithTag(tag, topic)
		}
		for _, p := range c.m.topics {
			m, err := p.apply(ms[i], topic)
			if err != nil {
				c.topicErrors.Add(int64(len(ms)))
				c.errs.Log(c.log, slog.LevelError, "mqtt_consumer: topic_parsing failed; the message's metrics are dropped",
					"topic", topic, "metrics", len(ms), "error", err)
				return nil
			}
			ms[i] = m
		}
	}
	return ms
}

func (c *consumer) delivered(d morse.DeliveryInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.inflight[d.ID]
	if !ok {
		c.early[d.ID] = true
		return
	}
	delete(c.inflight, d.ID)
	c.undelivered.Set(int64(len(c.inflight)))
	c.finish(e)
}

// finish marks e done and acknowledges every done message at the head of the queue: MQTT
// wants acknowledgements in the order the messages came. The caller holds c.mu, so that
// acknowledgements leave in that order whichever goroutine finishes a message.
func (c *consumer) finish(e *entry) {
	e.done = true
	n := 0
	for n < len(c.queue) && c.queue[n].done {
		c.queue[n].msg.Ack()
		c.queue[n] = nil
		n++
		<-c.room
	}
	c.queue = c.queue[n:]
}
