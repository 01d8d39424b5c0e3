package influx_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// benchMetric is a realistic metric: four tags, five fields of mixed types, the one every
// serializer's benchmarks use.
func benchMetric() morse.Metric { return testutil.BenchMetric() }

func BenchmarkSerializer(b *testing.B) {
	s := influx.New(influx.Options{})
	m := benchMetric()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		if buf, err = s.AppendMetric(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkSerializerBatch encodes a batch of 1000 into one reused buffer, as an output does.
func BenchmarkSerializerBatch(b *testing.B) {
	s := influx.New(influx.Options{})
	batch := make([]morse.Metric, 1000)
	for i := range batch {
		batch[i] = benchMetric().WithTime(time.Unix(1700000000, int64(i)))
	}
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf, _ = s.AppendBatch(buf[:0], batch)
	}
	b.ReportMetric(float64(b.N)*float64(len(batch))/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkSerializerLineMetrics writes what morse-bench load sends, received as line metrics, as
// an InfluxDB output does: as they are, or with unsigned integers rewritten as signed ones.
func BenchmarkSerializerLineMetrics(b *testing.B) {
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 1000, Lines: 1000})
	if err != nil {
		b.Fatal(err)
	}
	var batch []morse.Metric
	p := &parser.Parser{LineMetrics: func() bool { return true }}
	res := p.Parse(pool.AppendLines(nil, 0, pool.Len(), 1700000000000000000), func(m morse.Metric) { batch = append(batch, m) })
	if res.Errors != 0 || len(batch) != pool.Len() {
		b.Fatalf("%d lines parsed: %v", len(batch), res.Err())
	}
	for _, uints := range []bool{true, false} {
		b.Run(fmt.Sprintf("uint_support=%v", uints), func(b *testing.B) {
			s := influx.New(influx.Options{UintSupport: uints})
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = s.AppendBatch(buf[:0], batch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/line")
		})
	}
}
