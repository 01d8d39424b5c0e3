package socketwriter

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	parser "github.com/morse-agent/morse/plugins/parsers/influx"
)

// BenchmarkWrite sends batches of 1000 line metrics as line protocol over TCP to a peer
// that reads and discards them: the influx fast path, with the serializer behind the
// registry. It reports ns and allocations per metric.
func BenchmarkWrite(b *testing.B) {
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 100, Lines: 1000})
	if err != nil {
		b.Fatal(err)
	}
	text := pool.AppendLines(nil, 0, 1000, time.Now().Add(-time.Hour).UnixNano())
	var batch []morse.Metric
	(&parser.Parser{LineMetrics: func() bool { return true }}).Parse(text, func(m morse.Metric) { batch = append(batch, m) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c)
	})
	w := New()
	w.Address = "tcp://" + ln.Addr().String()
	ctx := context.Background()
	if err := w.Init(); err != nil {
		b.Fatal(err)
	}
	if err := w.Connect(ctx); err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/metric")
}
