package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// message is one PUBLISH and the positions in the batch of the metrics it carries.
type message struct {
	topic   string
	payload []byte
	metrics []int
}

// drops collects the metrics left out of a write, with the first reason.
type drops struct {
	idx    map[int]bool
	reason string
	err    error
}

func (d *drops) add(reason string, err error, idx ...int) {
	if d.idx == nil {
		d.idx = map[int]bool{}
	}
	for _, i := range idx {
		d.idx[i] = true
	}
	if d.err == nil {
		d.reason, d.err = reason, err
	}
}

// result is the write's outcome for a batch of n: nil, a permanent error when every metric
// was dropped, or a partial write naming the dropped ones.
func (d *drops) result(n int) error {
	if len(d.idx) == 0 {
		return nil
	}
	if len(d.idx) >= n {
		return morse.Permanent(d.reason, d.err)
	}
	idx := make([]int, 0, len(d.idx))
	for i := range n {
		if d.idx[i] {
			idx = append(idx, i)
		}
	}
	return &morse.PartialWriteError{Dropped: len(idx), Reason: d.reason, Err: d.err, Indices: idx}
}

// Write publishes batch in the layout asked for. A message the connection lost makes the
// batch retryable (what was published already may then come twice); one the broker refused
// drops its metrics, counted.
func (m *MQTT) Write(ctx context.Context, batch []morse.Metric) error {
	m.mu.Lock()
	defer m.mu.Unlock() // one write at a time, as Telegraf's; Homie's state is shared
	if m.cl == nil {
		return morse.Retryable(errors.New("mqtt: not connected"), 0)
	}
	if len(batch) == 0 {
		return nil
	}
	var d drops
	var msgs []message
	switch m.Layout {
	case "batch":
		msgs = m.collectBatch(batch, &d)
	case "field":
		msgs = m.collectFields(batch, &d)
	case "homie-v4":
		msgs = m.collectHomie(batch, &d)
	default:
		msgs = m.collectEach(batch, &d)
	}
	for _, msg := range msgs {
		pctx, cancel := context.WithTimeout(ctx, time.Duration(m.Timeout))
		err := m.cl.Publish(pctx, msg.topic, msg.payload, byte(m.QoS), m.Retain)
		cancel()
		if err == nil {
			continue
		}
		if _, ok := errors.AsType[*morse.PermanentError](err); ok {
			d.add(morse.ReasonPermanent, err, msg.metrics...)
			m.dropLog.Log(m.logger(), slog.LevelError, "mqtt: the broker refused a message", "topic", msg.topic, "error", err)
			continue
		}
		return fmt.Errorf("mqtt: %w", err)
	}
	return d.result(len(batch))
}

// topicOf renders the topic template for m, leaving out empty elements (a missing tag);
// an empty result is the metric's name, as in Telegraf.
func (m *MQTT) topicOf(mt morse.Metric) (string, error) {
	var b strings.Builder
	if err := m.topic.Execute(&b, templateMetric{mt}); err != nil {
		return "", err
	}
	raw := b.String()
	parts := strings.Split(raw, "/")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	topic := strings.Join(kept, "/")
	switch {
	case topic == "":
		return mt.Name(), nil
	case strings.HasPrefix(raw, "/"):
		return "/" + topic, nil
	}
	return topic, nil
}

func (m *MQTT) collectEach(batch []morse.Metric, d *drops) []message {
	msgs := make([]message, 0, len(batch))
	for i, mt := range batch {
		topic, err := m.topicOf(mt)
		if err != nil {
			d.add(morse.ReasonPermanent, fmt.Errorf("topic template: %w", err), i)
			continue
		}
		buf, err := m.ser.AppendMetric(nil, mt)
		if err != nil {
			d.add(morse.ReasonSerialize, err, i)
			continue
		}
		msgs = append(msgs, message{topic: topic, payload: buf, metrics: []int{i}})
	}
	return msgs
}

// collectBatch makes one message per topic, in the order each topic first appears, with
// the format's batch (json's {"metrics":[...]}, or the entries one after another).
func (m *MQTT) collectBatch(batch []morse.Metric, d *drops) []message {
	var order []string
	byTopic := map[string][]int{}
	for i, mt := range batch {
		topic, err := m.topicOf(mt)
		if err != nil {
			d.add(morse.ReasonPermanent, fmt.Errorf("topic template: %w", err), i)
			continue
		}
		if _, ok := byTopic[topic]; !ok {
			order = append(order, topic)
		}
		byTopic[topic] = append(byTopic[topic], i)
	}
	msgs := make([]message, 0, len(order))
	for _, topic := range order {
		idx := byTopic[topic]
		group := make([]morse.Metric, len(idx))
		for j, i := range idx {
			group[j] = batch[i]
		}
		buf, err := serializers.Append(m.ser, nil, group, true)
		if err != nil {
			var se *serializers.Error
			if !errors.As(err, &se) {
				d.add(morse.ReasonSerialize, err, idx...)
				continue
			}
			left := map[int]bool{}
			for _, j := range se.Indices {
				d.add(morse.ReasonSerialize, se.First, idx[j])
				left[j] = true
			}
			kept := idx[:0:0]
			for j, i := range idx {
				if !left[j] {
					kept = append(kept, i)
				}
			}
			idx = kept
		}
		if len(idx) > 0 {
			msgs = append(msgs, message{topic: topic, payload: buf, metrics: idx})
		}
	}
	return msgs
}

// collectFields makes one message per field, on the metric's topic and the field's name,
// with the value as text (data_format does not apply, as in Telegraf).
func (m *MQTT) collectFields(batch []morse.Metric, d *drops) []message {
	var msgs []message
	for i, mt := range batch {
		topic, err := m.topicOf(mt)
		if err != nil {
			d.add(morse.ReasonPermanent, fmt.Errorf("topic template: %w", err), i)
			continue
		}
		for _, f := range mt.Fields() {
			msgs = append(msgs, message{topic: topic + "/" + f.Key, payload: []byte(valueText(f.Value)), metrics: []int{i}})
		}
	}
	return msgs
}

// valueText writes a value as Telegraf's internal.ToString: floats without exponent.
func valueText(v morse.Value) string {
	switch v.Type() {
	case morse.TypeFloat:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case morse.TypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case morse.TypeUint:
		return strconv.FormatUint(v.Uint(), 10)
	case morse.TypeBool:
		return strconv.FormatBool(v.Bool())
	}
	return v.Str()
}

// templateMetric is what a topic template sees: the methods of Telegraf's TemplateMetric,
// so that '{{ .Name }}', '{{ .Tag "host" }}' and '{{ .Field "value" }}' work unchanged.
type templateMetric struct{ m morse.Metric }

// Name is the measurement.
func (t templateMetric) Name() string { return t.m.Name() }

// Tag is the tag's value, empty when the metric has no such tag.
func (t templateMetric) Tag(key string) string {
	v, _ := t.m.Tag(key)
	return v
}

// Field is the field's value, nil when the metric has no such field.
func (t templateMetric) Field(key string) any {
	if v, ok := t.m.Field(key); ok {
		return v.Interface()
	}
	return nil
}

// Time is the metric's time.
func (t templateMetric) Time() time.Time { return t.m.Time() }

// Tags are the tags as a map.
func (t templateMetric) Tags() map[string]string {
	out := map[string]string{}
	for _, tg := range t.m.Tags() {
		out[tg.Key] = tg.Value
	}
	return out
}

// Fields are the fields as a map.
func (t templateMetric) Fields() map[string]any {
	out := map[string]any{}
	for _, f := range t.m.Fields() {
		out[f.Key] = f.Value.Interface()
	}
	return out
}

func randomID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
