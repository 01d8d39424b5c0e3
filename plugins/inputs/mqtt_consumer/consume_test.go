package mqtt_consumer

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// Every QoS over both protocols: the metrics of each message arrive, tagged with the topic.
func TestConsumeEachQoSBothProtocols(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	for _, proto := range []string{"3.1.1", "5"} {
		for qos := range 3 {
			t.Run(fmt.Sprintf("v%s/qos%d", proto, qos), func(t *testing.T) {
				prefix := unique(t)
				m, st := consumerFor(t, b.Addr, proto, []string{prefix + "/#"}, func(m *MQTTConsumer) { m.QoS = qos })
				acc := &testutil.Accumulator{}
				start(t, m, acc)
				pub := publisher(t, b.Addr, proto, false)
				publish(t, pub, prefix+"/a", byte(qos), "cpu,host=a usage=1.5 1700000000000000000", "cpu,host=a usage=2.5 1700000001000000000\nmem used=3i 1700000001000000000")
				wait(t, acc, 3)
				ms := acc.Metrics()
				require.Len(t, ms, 3)
				for _, mt := range ms {
					topic, _ := mt.Tag("topic")
					assert.Equal(t, prefix+"/a", topic)
				}
				v, _ := ms[2].Field("used")
				assert.Equal(t, morse.Int(3), v)
				assert.EqualValues(t, 2, st.Counter("messages_received").Get())
			})
		}
	}
}

// A payload with a bad line keeps the good ones, and the bad one is counted; a payload that
// is all wrong in another format is counted too, and the next message still comes through.
func TestMalformedPayloadCountedRestKept(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	prefix := unique(t)
	m, st := consumerFor(t, b.Addr, "3.1.1", []string{prefix + "/#"}, func(m *MQTTConsumer) { m.QoS = 1 })
	acc := &testutil.Accumulator{}
	start(t, m, acc)
	pub := publisher(t, b.Addr, "3.1.1", false)
	publish(t, pub, prefix+"/x", 1,
		"good,n=1 v=1 1700000000000000000\nbad line here=\ngood,n=2 v=2 1700000000000000000",
		"this is not line protocol at all",
		"good,n=3 v=3 1700000000000000000")
	wait(t, acc, 3)
	require.Len(t, acc.MetricsNamed("good"), 3)
	assert.EqualValues(t, 2, st.Counter("parse_errors").Get())
	assert.EqualValues(t, 3, st.Counter("messages_received").Get())

	jm, jst := consumerFor(t, b.Addr, "5", []string{prefix + "/json"}, func(m *MQTTConsumer) {
		m.DataFormat = "json"
		m.Format.JSONNameKey = "name"
		m.QoS = 1
	})
	jacc := &testutil.Accumulator{}
	start(t, jm, jacc)
	publish(t, pub, prefix+"/json", 1, `{"name":"j","v":1`, `{"name":"j","v":2}`)
	wait(t, jacc, 1)
	assert.EqualValues(t, 1, jst.Counter("parse_errors").Get())
	v, _ := jacc.Metrics()[0].Field("v")
	assert.Equal(t, morse.Float(2), v)
}

// topic_parsing takes the measurement, tags and typed fields from the topic; a field that
// does not convert drops its message's metrics, counted.
func TestTopicParsing(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	prefix := unique(t)
	m, st := consumerFor(t, b.Addr, "3.1.1", []string{prefix + "/#"}, func(m *MQTTConsumer) {
		empty := ""
		m.TopicTag = &empty
		m.QoS = 1
		m.TopicParsing = []TopicParsing{{
			Topic: prefix + "/+/+/+", Measurement: "_/measurement/_/_", Tags: "_/_/host/_", Fields: "_/_/_/room",
			Types: map[string]string{"room": "int"},
		}}
	})
	acc := &testutil.Accumulator{}
	start(t, m, acc)
	pub := publisher(t, b.Addr, "3.1.1", false)
	publish(t, pub, prefix+"/temp/h1/12", 1, "x value=20.5 1700000000000000000")
	publish(t, pub, prefix+"/temp/h1/twelve", 1, "x value=20.5 1700000000000000000")
	publish(t, pub, prefix+"/other", 1, "x value=1 1700000000000000000")
	wait(t, acc, 2)
	ms := acc.Metrics()
	require.Len(t, ms, 2)
	assert.Equal(t, "temp", ms[0].Name())
	host, _ := ms[0].Tag("host")
	assert.Equal(t, "h1", host)
	room, _ := ms[0].Field("room")
	assert.Equal(t, morse.Int(12), room)
	_, hasTopic := ms[0].Tag("topic")
	assert.False(t, hasTopic, "topic_tag = \"\" leaves the topic out")
	assert.Equal(t, "x", ms[1].Name(), "a topic that does not match is left alone")
	assert.EqualValues(t, 1, st.Counter("topic_parsing_errors").Get())
}

func TestValidate(t *testing.T) {
	m := New()
	m.QoS = 3
	m.PersistentSession = true
	m.Protocol = "4"
	m.Servers = []string{"http://x:1"}
	m.TopicParsing = []TopicParsing{{Topic: "a/+", Measurement: "a/b/c"}}
	err := m.Validate()
	require.Error(t, err)
	for _, key := range []string{"qos:", "persistent_session:", "protocol:", "servers:", "topic_parsing:"} {
		assert.Contains(t, err.Error(), key)
	}
}
