package kafka_consumer

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse/agent"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	_ "github.com/morse-agent/morse/plugins/outputs/socket_writer" // the tests' sink
)

// produceSeq writes n metrics numbered 0..n-1 as line protocol, perMsg lines per message,
// spread over the topic's partitions.
func produceSeq(t testing.TB, srv *testserver.Kafka, topic string, n, perMsg int) {
	t.Helper()
	cl := srv.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < n; i += perMsg {
		var msg []byte
		for j := i; j < min(i+perMsg, n); j++ {
			msg = fmt.Appendf(msg, "kc,src=test v=1.5,n=%di %d\n", j, 1_700_000_000_000_000_000+int64(j))
		}
		recs = append(recs, &kgo.Record{Value: msg})
		if len(recs) == 1000 {
			require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
			recs = recs[:0]
		}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

var seqField = regexp.MustCompile(`\bn=(\d+)i`)

// seqCounter counts the numbered metrics of line protocol: how often each was seen.
type seqCounter struct {
	mu   sync.Mutex
	seen map[int]int
	all  int
}

func (c *seqCounter) line(b []byte) {
	m := seqField.FindSubmatch(b)
	if m == nil {
		return
	}
	n, _ := strconv.Atoi(string(m[1]))
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[int]int{}
	}
	c.seen[n]++
	c.all++
	c.mu.Unlock()
}

// counts returns how many distinct metrics were seen and how many in all.
func (c *seqCounter) counts() (distinct, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen), c.all
}

// missing lists the numbers below n not seen, at most 10.
func (c *seqCounter) missing(n int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i := 0; i < n && len(out) < 10; i++ {
		if c.seen[i] == 0 {
			out = append(out, i)
		}
	}
	return out
}

// lineSink is a TCP listener that counts the numbered metrics that socket_writer sends it.
type lineSink struct {
	seqCounter
	ln net.Listener
	wg sync.WaitGroup
}

// startSink listens on addr ("127.0.0.1:0" for a free port) until the test ends.
func startSink(t testing.TB, addr string) *lineSink {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s := &lineSink{ln: ln}
	s.wg.Go(s.accept)
	t.Cleanup(s.close)
	return s
}

func (s *lineSink) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Go(func() {
			defer conn.Close()
			sc := bufio.NewScanner(conn)
			for sc.Scan() {
				s.line(sc.Bytes())
			}
		})
	}
}

func (s *lineSink) close() {
	_ = s.ln.Close()
	s.wg.Wait()
}

// consumerConf is an agent config with one consumer, quick to give up on a killed member
// and to commit, and the given output table.
func consumerConf(brokers, topic, group string, undelivered int, output string) string {
	return fmt.Sprintf(`
[agent]
  interval = "10s"
  flush_interval = "100ms"
  metric_batch_size = 1000
  metric_buffer_limit = 200000
  omit_hostname = true
  shutdown_timeout = "5s"
[[inputs.kafka_consumer]]
  brokers = [%q]
  topics = [%q]
  consumer_group = %q
  max_undelivered_messages = %d
  session_timeout = "2s"
  commit_interval = "50ms"
%s`, brokers, topic, group, undelivered, output)
}

// socketOutput is the output table of a socket_writer to addr.
func socketOutput(addr string) string {
	return fmt.Sprintf("[[outputs.socket_writer]]\n  address = \"tcp://%s\"\n", addr)
}

// runAgent runs an agent of conf (testserver.RunAgent).
func runAgent(t testing.TB, conf string) (a *agent.Agent, stop func() error) {
	t.Helper()
	cfg, err := config.Load(config.Options{Sources: []config.Source{{Name: "test.conf", Data: []byte(conf)}}})
	require.NoError(t, err)
	return testserver.RunAgent(t, cfg)
}

// committed sums the group's committed offsets of topic: how many messages it will not read
// again.
func committed(t testing.TB, srv *testserver.Kafka, group, topic string) (total int64, byPart map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := srv.Admin(t).FetchOffsets(ctx, group)
	require.NoError(t, err)
	byPart = map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			byPart[o.Partition] = o.At
			total += o.At
		}
	})
	return total, byPart
}

// members returns, per member of the group, how many partitions of topic it holds.
func members(t testing.TB, srv *testserver.Kafka, group, topic string) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := srv.Admin(t).DescribeGroups(ctx, group)
	require.NoError(t, err)
	var out []int
	for _, m := range described[group].Members {
		n := 0
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range ca.Topics {
				if tp.Topic == topic {
					n += len(tp.Partitions)
				}
			}
		}
		out = append(out, n)
	}
	return out
}
