package grok_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/grok"
)

// BenchmarkParse reads testdata/apache_combined.log, 1000 lines of an Apache combined log,
// with Telegraf's default pattern, %{COMBINED_LOG_FORMAT}: the same bytes can be given to
// Telegraf's grok parser for the side-by-side figure.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/apache_combined.log")
	if err != nil {
		b.Fatal(err)
	}
	p, err := grok.New(grok.Options{}, parsers.Settings{MetricName: "file"})
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Count(data, []byte{'\n'})
	n := 0
	emit := func(morse.Metric) { n++ }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Parse(data, emit); err != nil {
			b.Fatal(err)
		}
	}
	if n != lines*b.N {
		b.Fatalf("%d metrics from %d passes over %d lines", n, b.N, lines)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
}
