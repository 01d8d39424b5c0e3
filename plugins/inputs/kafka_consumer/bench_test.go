package kafka_consumer

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse/internal/loadgen"
	"github.com/morse-agent/morse/internal/testserver"
	_ "github.com/morse-agent/morse/plugins/outputs/file" // the discarding sink: /dev/null
)

// cpuTime is the CPU time this process has used, user and system. The broker is another
// process, so it is not counted.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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
// agent with inputs.kafka_consumer (delivery tracking, commits) and outputs.file writing
// line protocol to /dev/null. Each iteration reads the whole topic with a new consumer
// group. It reports lines/s from the agent's start (the group join included), lines/s from
// the first write on, and lines per CPU-second of this process (the broker excluded).
func BenchmarkKafkaToDiscard(b *testing.B) {
	const lines = 200_000
	srv := testserver.StartKafka(b, testserver.KafkaOptions{FullJIT: true})
	for _, tc := range []struct{ perMsg, undelivered int }{{1, 1000}, {1, 10_000}, {100, 1000}} {
		b.Run(fmt.Sprintf("lines_per_message=%d,max_undelivered=%d", tc.perMsg, tc.undelivered), func(b *testing.B) {
			topic := fmt.Sprintf("bench-%d-%d", tc.perMsg, tc.undelivered)
			srv.CreateTopic(b, topic, 4, nil)
			produceLines(b, srv, topic, lines, tc.perMsg)
			var wall, flowing, cpu time.Duration
			group := 0
			for b.Loop() {
				group++
				conf := fmt.Sprintf(`
[agent]
  flush_interval = "1s"
  metric_batch_size = 1000
  metric_buffer_limit = 100000
  omit_hostname = true
[[inputs.kafka_consumer]]
  brokers = [%q]
  topics = [%q]
  consumer_group = "bench-%s-%d"
  max_undelivered_messages = %d
[[outputs.file]]
  files = ["/dev/null"]
`, srv.Addr(), topic, topic, group, tc.undelivered)
				start, cpu0 := time.Now(), cpuTime(b)
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
				cpu += cpuTime(b) - cpu0
				if err := stop(); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(lines) * float64(group)
			b.ReportMetric(n/wall.Seconds(), "lines/s")
			b.ReportMetric(n/flowing.Seconds(), "flowing-lines/s")
			b.ReportMetric(n/cpu.Seconds(), "lines/cpu-s")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/line")
		})
	}
}
