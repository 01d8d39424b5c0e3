package file_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/plugins/outputs/file"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
)

// benchBatch is 1000 lines of the load generator's mix as line metrics, the form in which
// the agent hands a listener's metrics to an output that writes lines.
func benchBatch(b *testing.B) []morse.Metric {
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 100, Lines: 1000})
	if err != nil {
		b.Fatal(err)
	}
	text := pool.AppendLines(nil, 0, 1000, time.Now().Add(-time.Hour).UnixNano())
	var batch []morse.Metric
	(&parser.Parser{LineMetrics: func() bool { return true }}).Parse(text, func(m morse.Metric) { batch = append(batch, m) })
	return batch
}

// BenchmarkWrite writes batches of 1000 line metrics as line protocol to a discarding
// stdout: the influx fast path, with the serializer behind the registry. It reports ns and
// allocations per metric.
func BenchmarkWrite(b *testing.B) {
	batch := benchBatch(b)
	f := file.New()
	f.Stdout = io.Discard
	if err := f.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/metric")
}
