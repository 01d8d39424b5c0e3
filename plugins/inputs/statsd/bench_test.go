package statsd

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/morse-agent/morse/internal/testutil"
)

// BenchmarkParse parses and aggregates packets of 16 lines of every kind over 1000 series,
// as one worker does, and reports the cost of a line.
func BenchmarkParse(b *testing.B) {
	s := New()
	s.SetLogger(slog.New(slog.DiscardHandler))
	s.Percentiles = []float64{50, 90, 99}
	testutil.Decode(b, "", s)
	if err := s.setup(); err != nil {
		b.Fatal(err)
	}
	var packets [][]byte
	for p := range 64 {
		var buf []byte
		for i := range 16 {
			n := p*16 + i
			typ := [...]string{"c", "g", "ms", "s"}[n%4]
			buf = fmt.Appendf(buf, "app.requests.m%d,host=host-%03d:%d|%s\n", n%50, n%20, n%97, typ)
		}
		packets = append(packets, buf)
	}
	lp := s.newLineParser(&testutil.Accumulator{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		lp.parsePacket(packets[i%len(packets)], "")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/line")
}
