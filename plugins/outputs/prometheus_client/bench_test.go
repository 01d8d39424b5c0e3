package prometheusclient

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/morse-agent/morse"
)

// benchStore fills an output with n series: node_exporter-like families of 100 series
// each, three labels per series.
func benchStore(b *testing.B, n int) *Client {
	b.Helper()
	c := New()
	c.CollectorsExclude = []string{"gocollector", "process"}
	c.MetricVersion = 2
	c.ExpirationInterval = 0
	if err := c.Init(); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	batch := make([]morse.Metric, 0, 1000)
	for i := range n {
		tags := []morse.Tag{{Key: "cpu", Value: "cpu" + strconv.Itoa(i%100)}, {Key: "host", Value: "bench.example.org"},
			{Key: "mode", Value: "idle"}}
		fields := []morse.Field{{Key: "node_family_" + strconv.Itoa(i/100) + "_total", Value: morse.Float(float64(i) * 1.5)}}
		batch = append(batch, morse.NewMetric("prometheus", tags, fields, now))
		if len(batch) == cap(batch) {
			if err := c.Write(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return c
}

// BenchmarkScrape renders a store of 100,000 series, as a scrape does (without gzip,
// which a scraper may not ask for): the target is 100 ms and 2 allocations per series at
// most.
func BenchmarkScrape(b *testing.B) {
	const n = 100_000
	c := benchStore(b, n)
	buf := c.render(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bp := bufPool.Get().(*[]byte)
		*bp = c.render((*bp)[:0])
		bufPool.Put(bp)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scrape")
}

// BenchmarkWrite writes batches of 1,000 metrics into a store that holds their series.
func BenchmarkWrite(b *testing.B) {
	c := benchStore(b, 100_000)
	now := time.Now()
	batch := make([]morse.Metric, 1000)
	for i := range batch {
		batch[i] = morse.NewMetric("prometheus", []morse.Tag{{Key: "cpu", Value: "cpu" + strconv.Itoa(i%100)},
			{Key: "host", Value: "bench.example.org"}, {Key: "mode", Value: "idle"}},
			[]morse.Field{{Key: "node_family_" + strconv.Itoa(i/100) + "_total", Value: morse.Float(1)}}, now)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Write(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/metric")
}
