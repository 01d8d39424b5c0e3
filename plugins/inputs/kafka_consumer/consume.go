package kafka_consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/selfstat"
)

// consumer is one run of the input, from Start to Stop: the poll loop, which reads no more
// messages than max_undelivered_messages allows in flight; the delivery loop, which learns
// from the agent which messages are done; and the commit loop, which commits each partition's
// offset up to its first message not done.
type consumer struct {
	k    *KafkaConsumer
	acc  morse.TrackingAccumulator
	cl   *kgo.Client
	log  *slog.Logger
	errs *throttle.Throttle

	messages, undelivered, parseErrors, tooLong, commitsDone, commitErrors *selfstat.Counter

	mu        sync.Mutex
	parts     map[string]map[int32]*partition // assigned partitions with messages read
	inflight  map[morse.TrackingID]ref
	early     map[morse.TrackingID]bool // reported done before AddTrackingMetricGroup returned
	room      chan struct{}             // signalled when a message is done
	toCommit  chan struct{}             // signalled when a partition's offset moved
	headerSet map[string]bool           // msg_headers_as_tags
}

func newConsumer(k *KafkaConsumer, acc morse.TrackingAccumulator) *consumer {
	st := k.stats
	if st == nil {
		st = selfstat.NewPluginStats(nil, "internal_kafka_consumer", nil)
	}
	c := &consumer{
		k: k, acc: acc, log: k.logger(), errs: throttle.New(30 * time.Second),
		messages: st.Counter("messages"), undelivered: st.Counter("undelivered_messages"),
		parseErrors: st.Counter("parse_errors"), tooLong: st.Counter("messages_too_long"),
		commitsDone: st.Counter("commits"), commitErrors: st.Counter("commit_errors"),
		parts:    map[string]map[int32]*partition{},
		inflight: map[morse.TrackingID]ref{}, early: map[morse.TrackingID]bool{},
		room: make(chan struct{}, 1), toCommit: make(chan struct{}, 1),
		headerSet: map[string]bool{},
	}
	for _, h := range k.MsgHeadersAsTags {
		if h != k.MsgHeaderAsMetricName {
			c.headerSet[h] = true
		}
	}
	return c
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// poll reads as many messages as there is room for, hands each to the agent as one tracked
// group, and lets the group rebalance while it waits for room.
func (c *consumer) poll(ctx context.Context) {
	for ctx.Err() == nil {
		free := c.waitRoom(ctx)
		if free == 0 {
			return
		}
		fetches := c.cl.PollRecords(ctx, free)
		if fetches.IsClientClosed() {
			c.cl.AllowRebalance()
			return
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.errs.Log(c.log, slog.LevelError, "fetch failed", "topic", topic, "partition", p, "error", err)
			}
		})
		fetches.EachRecord(c.handle)
		c.cl.AllowRebalance()
	}
}

// waitRoom waits until fewer than max_undelivered_messages are in flight and returns how
// many more may be read, or 0 once ctx ends.
func (c *consumer) waitRoom(ctx context.Context) int {
	for {
		c.mu.Lock()
		free := c.k.MaxUndeliveredMessages - len(c.inflight)
		c.mu.Unlock()
		if free > 0 {
			return free
		}
		select {
		case <-ctx.Done():
			return 0
		case <-c.room:
		}
	}
}

// handle turns one message into metrics and adds them as one tracked group. A message that
// yields no metric is a group too, empty, so that its offset is committed in its turn.
func (c *consumer) handle(r *kgo.Record) {
	c.messages.Incr()
	var ms []morse.Metric
	if max := c.k.MaxMessageLen; max > 0 && len(r.Value) > max {
		c.tooLong.Incr()
		c.errs.Log(c.log, slog.LevelError, "message dropped: longer than max_message_len",
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "bytes", len(r.Value), "max_message_len", max)
	} else {
		if err := c.k.parse(r.Value, func(m morse.Metric) { ms = append(ms, m) }); err != nil {
			c.parseErrors.Add(int64(parsers.Refused(err))) // each refused entry
			c.errs.Log(c.log, slog.LevelError, "message not fully parsed", "topic", r.Topic,
				"partition", r.Partition, "offset", r.Offset, "error", err)
		}
		ms = c.decorate(r, ms)
	}
	c.mu.Lock()
	at := c.partition(r.Topic, r.Partition).add(r)
	c.mu.Unlock()
	// The agent may report the group done before it returns its id, so the lock is not
	// held meanwhile (the agent may make an input wait for its outputs) and such an early
	// report waits in c.early.
	id := c.acc.AddTrackingMetricGroup(ms)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.early[id] {
		delete(c.early, id)
		c.finish(at)
		return
	}
	c.inflight[id] = at
	c.undelivered.Set(int64(len(c.inflight)))
}

// partition returns the tracker of an assigned partition, creating it on its first message.
// The caller holds c.mu.
func (c *consumer) partition(topic string, id int32) *partition {
	byID := c.parts[topic]
	if byID == nil {
		byID = map[int32]*partition{}
		c.parts[topic] = byID
	}
	p := byID[id]
	if p == nil {
		p = &partition{topic: topic, id: id}
		byID[id] = p
	}
	return p
}

// decorate applies msg_headers_as_tags, msg_header_as_metric_name, topic_tag and
// timestamp_source to the metrics of r.
func (c *consumer) decorate(r *kgo.Record, ms []morse.Metric) []morse.Metric {
	k := c.k
	for _, h := range r.Headers {
		switch {
		case c.headerSet[h.Key]:
			for i := range ms {
				ms[i] = ms[i].WithTag(h.Key, string(h.Value))
			}
		case k.MsgHeaderAsMetricName != "" && h.Key == k.MsgHeaderAsMetricName:
			for i := range ms {
				ms[i] = ms[i].WithName(string(h.Value))
			}
		}
	}
	for i := range ms {
		if k.TopicTag != "" {
			ms[i] = ms[i].WithTag(k.TopicTag, r.Topic)
		}
		if k.TimestampSource == "inner" || k.TimestampSource == "outer" {
			ms[i] = ms[i].WithTime(r.Timestamp)
		}
	}
	return ms
}

// deliveries books each group the agent reports done: the message's slot is free again,
// and its partition's offset may move.
func (c *consumer) deliveries(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-c.acc.Delivered():
			c.delivered(d)
		}
	}
}

// drainDeliveries books the reports waiting in Delivered, once the delivery loop ended.
func (c *consumer) drainDeliveries() {
	for {
		select {
		case d := <-c.acc.Delivered():
			c.delivered(d)
		default:
			return
		}
	}
}

func (c *consumer) delivered(d morse.DeliveryInfo) {
	c.mu.Lock()
	at, ok := c.inflight[d.ID]
	if ok {
		delete(c.inflight, d.ID)
		c.undelivered.Set(int64(len(c.inflight)))
		c.finish(at)
	} else {
		c.early[d.ID] = true
	}
	c.mu.Unlock()
	signal(c.room)
}

// finish marks the message at done. The caller holds c.mu.
func (c *consumer) finish(at ref) {
	if at.p.done(at.seq) {
		signal(c.toCommit)
	}
}

// commits commits the offsets that moved, one request at a time, at most once per
// commit_interval.
func (c *consumer) commits(ctx context.Context) {
	every := time.Duration(c.k.CommitInterval)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.toCommit:
		}
		c.commitNow(ctx)
		if every > 0 {
			t := time.NewTimer(every)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// commitNow commits the offsets that moved and waits for the answer. Offsets whose commit
// failed, or was cut short by Stop, are taken again by the next commit.
func (c *consumer) commitNow(ctx context.Context) {
	offsets := c.moved(nil)
	if len(offsets) == 0 {
		return
	}
	var failed bool
	c.cl.CommitOffsetsSync(ctx, offsets, func(cl *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		failed = !c.onCommit(cl, req, resp, err)
	})
	if failed {
		c.redo(offsets)
		signal(c.toCommit) // try again after commit_interval
	}
}

// redo marks the partitions of offsets to be committed again, unless they were revoked.
func (c *consumer) redo(offsets map[string]map[int32]kgo.EpochOffset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, byID := range offsets {
		for id := range byID {
			if p := c.parts[topic][id]; p != nil {
				p.dirty = true
			}
		}
	}
}

// moved takes the offsets to commit of the partitions whose offset moved, of only those in
// which when it is not nil.
func (c *consumer) moved(which map[string][]int32) map[string]map[int32]kgo.EpochOffset {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[int32]kgo.EpochOffset{}
	take := func(p *partition) {
		if !p.dirty {
			return
		}
		p.dirty = false
		if out[p.topic] == nil {
			out[p.topic] = map[int32]kgo.EpochOffset{}
		}
		out[p.topic][p.id] = p.commit
	}
	for topic, byID := range c.parts {
		if which == nil {
			for _, p := range byID {
				take(p)
			}
			continue
		}
		for _, id := range which[topic] {
			if p := byID[id]; p != nil {
				take(p)
			}
		}
	}
	return out
}

// onCommit counts and logs a commit's answer and reports whether it succeeded.
func (c *consumer) onCommit(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) bool {
	if err == nil && resp != nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 && err == nil {
					err = fmt.Errorf("topic %s partition %d: error code %d", t.Topic, p.Partition, p.ErrorCode)
				}
			}
		}
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			c.commitErrors.Incr()
			c.errs.Log(c.log, slog.LevelWarn, "commit failed; the next one carries the offsets on", "error", err)
		}
		return false
	}
	c.commitsDone.Incr()
	return true
}

// revoked commits what is done of the revoked partitions and forgets them: messages of them
// still in flight will be read again by the member that takes them over.
func (c *consumer) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if offsets := c.moved(revoked); len(offsets) > 0 {
		cl.CommitOffsetsSync(ctx, offsets, func(cl *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			c.onCommit(cl, req, resp, err)
		})
	}
	c.forget(revoked)
}

// lost forgets partitions that the group took away without a revoke, where a commit would
// fail anyway.
func (c *consumer) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	c.forget(lost)
}

func (c *consumer) forget(parts map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, ids := range parts {
		for _, id := range ids {
			if p := c.parts[topic][id]; p != nil {
				p.revoked = true
				delete(c.parts[topic], id)
			}
		}
	}
}

// stopping forgets every partition, so that the revoke that closing the client brings
// commits nothing more.
func (c *consumer) stopping() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, byID := range c.parts {
		for _, p := range byID {
			p.revoked = true
		}
	}
	c.parts = map[string]map[int32]*partition{}
}
