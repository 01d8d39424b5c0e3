package kafka

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
)

// benchTopics numbers the benchmarks' topics, so that every run has a fresh one.
var benchTopics atomic.Int64

// BenchmarkEdgeToKafka is the edge tier's path into Kafka: line protocol as a listener
// receives it is parsed into line metrics (batch of 1000), and the Kafka output writes the
// batch as influx messages to a real broker, idempotent with all acks, waiting for the
// acknowledgements, as the agent's flush does. It reports lines/s and the CPU this process
// spent per line (the broker's excluded); the agent's buffer and flush scheduling are not in
// it.
func BenchmarkEdgeToKafka(b *testing.B) {
	srv := testserver.StartKafka(b, testserver.KafkaOptions{FullJIT: true})
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 1000, Lines: 100_000})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Kafka)
	}{
		{"routing_tag=host", func(k *Kafka) { k.RoutingTag = "host" }},
		{"no_key", func(*Kafka) {}},
		{"routing_tag=host,lz4", func(k *Kafka) { k.RoutingTag, k.CompressionCodec = "host", 3 }},
		{"routing_tag=host,influx_uint_support", func(k *Kafka) { k.RoutingTag, k.InfluxUintSupport = "host", true }},
		{"routing_tag=host,linger=0", func(k *Kafka) { k.RoutingTag = "host"; k.extraOpts = []kgo.Opt{kgo.ProducerLinger(0)} }},
		{"routing_tag=host,linger=10ms", func(k *Kafka) {
			k.RoutingTag = "host"
			k.extraOpts = []kgo.Opt{kgo.ProducerLinger(10 * time.Millisecond)}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			topic := fmt.Sprintf("bench-%d", benchTopics.Add(1)) // -count runs again

			srv.CreateTopic(b, topic, 3, nil)
			k := connect(b, srv.Addr(), func(k *Kafka) { k.Topic = topic; tc.edit(k) })
			benchEdge(b, k, pool)
		})
	}
}

func benchEdge(b *testing.B, k *Kafka, pool *loadgen.Pool) {
	const batchSize, chunks = 1000, 100
	// The input is made before the clock starts: it stands for what a listener reads.
	texts := make([][]byte, chunks)
	base := time.Now().Add(-time.Hour).UnixNano()
	for i := range texts {
		texts[i] = pool.AppendLines(nil, int64(i*batchSize), batchSize, base)
	}
	p := &parser.Parser{LineMetrics: func() bool { return true }}
	batch := make([]morse.Metric, 0, batchSize)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, wall0 := testutil.CPUTime(b), time.Now() // the broker, another process, is not counted
	for b.Loop() {
		text := texts[n%chunks]
		n++
		batch = batch[:0]
		res := p.Parse(text, func(m morse.Metric) { batch = append(batch, m) })
		if res.Errors != 0 {
			b.Fatal(res.Err())
		}
		if err := write(b, k, batch); err != nil {
			b.Fatal(err)
		}
	}
	lines := float64(b.N * batchSize)
	b.ReportMetric(lines/time.Since(wall0).Seconds(), "lines/s")
	b.ReportMetric(float64((testutil.CPUTime(b)-cpu0).Nanoseconds())/lines, "cpu-ns/line")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/lines, "ns/line")
}
