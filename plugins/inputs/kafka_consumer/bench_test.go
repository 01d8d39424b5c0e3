package kafka_consumer

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	_ "github.com/morse-agent/morse/plugins/outputs/file" // the discarding sink: /dev/null
)

// benchGroups numbers the benchmark's consumer groups: each run reads the topic anew.
var benchGroups atomic.Int64

// produceLines fills topic with n generated lines, perMsg per message.
func produceLines(b *testing.B, srv *testserver.Kafka, topic string, n, perMsg int) {
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 1000, Lines: 100_000})
	if err != nil {
		b.Fatal(err)
	}
	cl := srv.Client(b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := time.Now().UnixNano()
	for seq := 0; seq < n; seq += perMsg {
		rec := &kgo.Record{Value: pool.AppendLines(nil, int64(seq), perMsg, base)}
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkKafkaToDiscard is the aggregating tier's path out of Kafka: a real broker, the
// agent with inputs.kafka_consumer (delivery tracking, commits) and a discarding sink:
// outputs.file writing line protocol to /dev/null, or outputs.socket_writer to a listener
// that discards, which takes line metrics as they are. Each iteration reads the whole topic with a new consumer
// group. It reports lines/s from the agent's start (the group join included), lines/s from
// the first write on, and lines per CPU-second of this process (the broker excluded).
func BenchmarkKafkaToDiscard(b *testing.B) {
	const lines = 200_000
	srv := testserver.StartKafka(b, testserver.KafkaOptions{FullJIT: true})
	discard := discardListener(b)
	outputs := map[string]string{
		"file": "[[outputs.file]]\n  files = [\"/dev/null\"]\n",
		// socket_writer writes line metrics as they are, so they are never taken apart.
		"socket": socketOutput(discard),
	}
	produced := map[int]string{}
	for _, tc := range []struct {
		perMsg, undelivered int
		output              string
	}{{1, 1000, "file"}, {1, 10_000, "file"}, {100, 1000, "file"}, {1, 10_000, "socket"}, {100, 1000, "socket"}} {
		b.Run(fmt.Sprintf("lines_per_message=%d,max_undelivered=%d,output=%s", tc.perMsg, tc.undelivered, tc.output), func(b *testing.B) {
			topic, ok := produced[tc.perMsg]
			if !ok {
				topic = fmt.Sprintf("bench-%d", tc.perMsg)
				srv.CreateTopic(b, topic, 4, nil)
				produceLines(b, srv, topic, lines, tc.perMsg)
				produced[tc.perMsg] = topic
			}
			var wall, flowing, cpu time.Duration
			runs := 0
			for b.Loop() {
				runs++
				conf := fmt.Sprintf(`
[agent]
  flush_interval = "1s"
  metric_batch_size = 1000
  metric_buffer_limit = 100000
  omit_hostname = true
[[inputs.kafka_consumer]]
  brokers = [%q]
  topics = [%q]
  consumer_group = "bench-%d"
  max_undelivered_messages = %d
%s`, srv.Addr(), topic, benchGroups.Add(1), tc.undelivered, outputs[tc.output])
				start, cpu0 := time.Now(), testutil.CPUTime(b) // the broker, another process, is not counted
				a, stop := runAgent(b, conf)
				deadline := time.Now().Add(2 * time.Minute)
				var first time.Time
				for {
					st := a.Outputs()
					if len(st) > 0 && st[0].Stats.Written > 0 && first.IsZero() {
						first = time.Now()
					}
					if len(st) > 0 && st[0].Stats.Written >= lines {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("not every line was written within 2 minutes")
					}
					time.Sleep(5 * time.Millisecond)
				}
				wall += time.Since(start)
				flowing += time.Since(first)
				cpu += testutil.CPUTime(b) - cpu0
				if err := stop(); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(lines) * float64(runs)
			b.ReportMetric(n/wall.Seconds(), "lines/s")
			b.ReportMetric(n/flowing.Seconds(), "flowing-lines/s")
			b.ReportMetric(n/cpu.Seconds(), "lines/cpu-s")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/line")
		})
	}
}

// discardListener accepts TCP connections on a free loopback port and discards what they
// send, until the benchmark ends.
func discardListener(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				_, _ = io.Copy(io.Discard, conn)
			})
		}
	})
	b.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}
