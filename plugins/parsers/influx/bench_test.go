package influx_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// benchInput is 1000 realistic lines: four tags, five fields of mixed types.
func benchInput() []byte {
	var b bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&b, "system_disk,device=nvme0n1p%d,fstype=ext4,host=web-%02d.prod.example.com,region=eu-west-1 "+
			"used_percent=%d.41234567,free=214748364800u,inodes_used=%di,mode=\"rw\",healthy=true %d\n",
			i%4, i%50, i%100, 1234567+i, 1700000000123456789+int64(i))
	}
	return b.Bytes()
}

func BenchmarkParser(b *testing.B) {
	data := benchInput()
	p := &influx.Parser{}
	n := 0
	emit := func(morse.Metric) { n++ }
	parseEach(b, p, data, emit)
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(testing.AllocsPerRun(5, func() { p.Parse(data, emit) }))/1000, "allocs/line")
}

// BenchmarkParse parses the same lines through the parsers contract, as an input with
// data_format = "influx" does (New, Entries): ns and allocations per metric, the figures
// that docs/bench/parsers.md sets beside Telegraf's parser.
func BenchmarkParse(b *testing.B) {
	data := benchInput()
	p, err := influx.New(influx.Options{}, parsers.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	var e parsers.Parser = influx.Entries{Parser: p}
	n := 0
	emit := func(morse.Metric) { n++ }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Parse(data, emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/metric")
}

// BenchmarkParserLineMetrics parses the same lines as line metrics: checked, not taken
// apart, as a listener does when its lines go unchanged to line-protocol outputs.
func BenchmarkParserLineMetrics(b *testing.B) {
	data := benchInput()
	p := &influx.Parser{LineMetrics: func() bool { return true }}
	var count lineCount
	parseEach(b, p, data, count.emit)
	count.check(b)
	b.ReportMetric(float64(count.metrics)/b.Elapsed().Seconds(), "lines/s")
}

// parseEach parses data once per iteration and fails b on any refused line.
func parseEach(b *testing.B, p *influx.Parser, data []byte, emit func(morse.Metric)) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := p.Parse(data, emit); res.Errors != 0 {
			b.Fatal(res.Err())
		}
	}
}

func BenchmarkParseReader(b *testing.B) {
	data := benchInput()
	p := &influx.Parser{}
	n := 0
	emit := func(morse.Metric) { n++ }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := p.ParseReader(bytes.NewReader(data), emit, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkParseDatagram parses 8 lines per call, as a UDP listener parses each datagram on
// its own: what one call costs beyond its lines shows here.
func BenchmarkParseDatagram(b *testing.B) {
	data := benchInput()
	var dgrams [][]byte
	for rest := data; len(rest) > 0; {
		end := 0
		for range 8 {
			i := bytes.IndexByte(rest[end:], '\n')
			if i < 0 {
				end = len(rest)
				break
			}
			end += i + 1
		}
		dgrams = append(dgrams, rest[:end])
		rest = rest[end:]
	}
	p := &influx.Parser{}
	n := 0
	emit := func(morse.Metric) { n++ }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range dgrams {
			p.Parse(d, emit)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkParseLoadDatagrams parses what morse-bench load sends over UDP, 8 lines a datagram,
// as line metrics, as the UDP listener of the end-to-end benchmark does.
func BenchmarkParseLoadDatagrams(b *testing.B) {
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 1000, Lines: 4096})
	if err != nil {
		b.Fatal(err)
	}
	var dgrams [][]byte
	for seq := int64(0); seq < int64(pool.Len()); seq += 8 {
		dgrams = append(dgrams, pool.AppendLines(nil, seq, 8, 1700000000000000000))
	}
	p := &influx.Parser{LineMetrics: func() bool { return true }}
	var count lineCount
	emit := count.emit
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range dgrams {
			if res := p.Parse(d, emit); res.Errors != 0 {
				b.Fatal(res.Err())
			}
		}
	}
	count.check(b)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(count.metrics), "ns/line")
}

// lineCount counts the metrics a parse emits, and how many of them are line metrics.
type lineCount struct{ metrics, lines int }

func (c *lineCount) emit(m morse.Metric) {
	c.metrics++
	if _, ok := m.Line(); ok {
		c.lines++
	}
}

// check fails b unless every metric was a line metric.
func (c *lineCount) check(b *testing.B) {
	if c.lines != c.metrics {
		b.Fatalf("%d of %d lines were line metrics", c.lines, c.metrics)
	}
}
