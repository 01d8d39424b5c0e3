package kafka_consumer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse/internal/testserver"
)

// testRegexpsAndLongMessages: topic_regexps picks up every matching topic and no other, a
// message over max_message_len is skipped, and its offset is committed with the others.
func testRegexpsAndLongMessages(t *testing.T, srv *testserver.Kafka) {
	const group = "rx-group"
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		srv.CreateTopic(t, topic, 1, nil)
		produceSeq(t, srv, topic, 20, 10)
	}
	cl := srv.Client(t, kgo.DefaultProduceTopic("rx-a"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	long := "kc,src=test v=1.5,n=999999i\n" + strings.Repeat("# padding\n", 100)
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(long)}).FirstErr())
	produceSeq(t, srv, "rx-a", 10, 10) // one more message after the long one

	k := New()
	k.Brokers, k.Topics, k.TopicRegexps, k.ConsumerGroup = []string{srv.Addr()}, nil, []string{"^rx-"}, group
	k.TopicTag, k.MaxMessageLen = "topic", 500
	ms := consumeWith(t, k, 50)
	byTopic := map[string]int{}
	for _, m := range ms {
		topic, _ := m.Tag("topic")
		byTopic[topic]++
		n, _ := m.Field("n")
		require.NotEqual(t, int64(999999), n.Int(), "the long message is skipped")
	}
	require.Equal(t, map[string]int{"rx-a": 30, "rx-b": 20}, byTopic)
	committedA, _ := committed(t, srv, group, "rx-a")
	require.Equal(t, int64(4), committedA, "the long message is committed with the others")
	committedB, _ := committed(t, srv, group, "rx-b")
	require.Equal(t, int64(2), committedB)
}
