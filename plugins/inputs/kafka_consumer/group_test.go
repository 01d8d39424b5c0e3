package kafka_consumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// buffered is how many metrics the agent's only output holds.
func buffered(a *agent.Agent) int {
	st := a.Outputs()
	if len(st) == 0 {
		return 0
	}
	return st[0].Stats.BufferSize
}

// testOutputDown: while the only output's sink is down, the consumer reads exactly
// max_undelivered_messages messages and no more, and commits nothing; once the sink is up,
// every metric arrives and every offset is committed.
func testOutputDown(t *testing.T, srv *testserver.Kafka) {
	const (
		topic, group        = "down", "down-group"
		metrics, perMsg     = 10_000, 10
		undelivered         = 100
		messages            = metrics / perMsg
		heldMetrics         = undelivered * perMsg
		sinkWait, sinkCheck = time.Minute, 20 * time.Millisecond
	)
	srv.CreateTopic(t, topic, 4, nil)
	produceSeq(t, srv, topic, metrics, perMsg)
	addr := testutil.FreeAddr(t)
	a, stop := runAgent(t, consumerConf(srv.Addr(), topic, group, undelivered, socketOutput(addr)))

	require.Eventually(t, func() bool { return buffered(a) == heldMetrics }, sinkWait, sinkCheck,
		"the consumer fills its %d undelivered messages", undelivered)
	require.Never(t, func() bool {
		n, _ := committed(t, srv, group, topic)
		return buffered(a) > heldMetrics || n > 0
	}, 2*time.Second, 100*time.Millisecond, "no more is read, and nothing is committed, while the output is down")

	sink := startSink(t, addr)
	require.Eventually(t, func() bool { d, _ := sink.counts(); return d == metrics }, sinkWait, sinkCheck)
	require.Eventually(t, func() bool { n, _ := committed(t, srv, group, topic); return n == messages }, sinkWait, 100*time.Millisecond,
		"every message is committed once written")
	require.NoError(t, stop())
	_, total := sink.counts()
	require.Equal(t, metrics, total, "a sink that was down and came back receives each metric once")
}

// testTwoConsumers: a second member takes half the partitions; when one member stops, the
// other takes them all, and every metric arrives.
func testTwoConsumers(t *testing.T, srv *testserver.Kafka) {
	const (
		topic, group = "share", "share-group"
		half, perMsg = 10_000, 10
		wait, check  = time.Minute, 50 * time.Millisecond
	)
	srv.CreateTopic(t, topic, 4, nil)
	sink := startSink(t, "127.0.0.1:0")
	conf := consumerConf(srv.Addr(), topic, group, 1000, socketOutput(sink.ln.Addr().String()))
	_, stopA := runAgent(t, conf)
	require.Eventually(t, func() bool { return equalInts(members(t, srv, group, topic), []int{4}) }, wait, check,
		"the first member takes every partition")
	_, stopB := runAgent(t, conf)
	require.Eventually(t, func() bool { return equalInts(members(t, srv, group, topic), []int{2, 2}) }, wait, check,
		"a second member halves the first one's share")

	produceSeq(t, srv, topic, half, perMsg)
	require.Eventually(t, func() bool { d, _ := sink.counts(); return d == half }, wait, check)
	require.Eventually(t, func() bool { n, _ := committed(t, srv, group, topic); return n == half/perMsg }, wait, check,
		"what was written is committed")
	require.NoError(t, stopA())
	require.Eventually(t, func() bool { return equalInts(members(t, srv, group, topic), []int{4}) }, wait, check,
		"the survivor takes over every partition")

	produceSeq(t, srv, topic, 2*half, perMsg) // numbers 0..2*half-1: the first half again
	require.Eventually(t, func() bool { d, _ := sink.counts(); return d == 2*half }, wait, check, "missing: %v", sink.missing(2*half))
	require.NoError(t, stopB())
	_, total := sink.counts()
	t.Logf("two consumers: %d metrics produced, %d received (a clean stop commits what was written)", 3*half, total)
	require.Equal(t, 3*half, total, "a clean stop and a rebalance duplicate nothing here")
}

func equalInts(got, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
