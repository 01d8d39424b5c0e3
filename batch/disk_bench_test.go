package batch

import (
	"os"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// e2eBatch returns n lines of the end-to-end benchmark's corpus (bench/loadgen with its
// default options) as the listener hands them over: line metrics, and the wire bytes.
func e2eBatch(tb testing.TB, n int) ([]morse.Metric, int) {
	tb.Helper()
	pool, err := loadgen.Generate(loadgen.DefaultGenOptions)
	if err != nil {
		tb.Fatal(err)
	}
	wire := pool.AppendLines(nil, 0, n, time.Now().UnixNano())
	var ms []morse.Metric
	p := &influx.Parser{LineMetrics: func() bool { return true }}
	p.Parse(wire, func(m morse.Metric) { ms = append(ms, m) })
	if len(ms) != n {
		tb.Fatalf("parsed %d of %d lines", len(ms), n)
	}
	return ms, len(wire)
}

// BenchmarkDiskBuffer writes, then reads, batches of 1000 metrics of the e2e corpus through
// a disk buffer that syncs every second (the default), and reports metrics/s each way and
// the bytes on disk per metric against the bytes on the wire.
func BenchmarkDiskBuffer(b *testing.B) {
	batch, wire := e2eBatch(b, DefaultBatchSize)
	newBuf := func(b *testing.B) *DiskBuffer {
		buf, err := NewDiskBuffer(1<<30, Eviction{}, DiskOptions{Dir: b.TempDir(), Logger: testutil.QuietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { buf.Close() })
		return buf
	}
	b.Run("write", func(b *testing.B) {
		buf := newBuf(b)
		b.ReportAllocs()
		for b.Loop() {
			buf.AddBatch(batch)
		}
		n := float64(buf.Len())
		b.ReportMetric(n/b.Elapsed().Seconds(), "metrics/s")
		b.ReportMetric(float64(buf.Bytes())/n, "disk-B/metric")
		b.ReportMetric(float64(wire)/float64(len(batch)), "wire-B/line")
	})
	b.Run("read", func(b *testing.B) {
		buf := newBuf(b)
		for range b.N {
			buf.AddBatch(batch)
		}
		dst := make([]morse.Metric, 0, DefaultBatchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			dst = buf.Batch(dst[:0], DefaultBatchSize)
			buf.Accept(dst)
		}
		b.StopTimer()
		if buf.Len() != 0 || len(dst) != DefaultBatchSize {
			b.Fatalf("%d left, last batch %d", buf.Len(), len(dst))
		}
		b.ReportMetric(float64(b.N*DefaultBatchSize)/b.Elapsed().Seconds(), "metrics/s")
	})
}

// BenchmarkDiskBufferRSS holds 10,000,000 metrics of the e2e corpus on disk (about 1.5 GB),
// reopens the buffer and reads a batch, and reports the process's peak resident memory
// (VmHWM, reset before the fill) for each phase. The bound is 64 MiB.
func BenchmarkDiskBufferRSS(b *testing.B) {
	const total = 10_000_000
	batch, _ := e2eBatch(b, DefaultBatchSize)
	dir := b.TempDir()
	o := DiskOptions{Dir: dir, Logger: testutil.QuietLogger()}
	for b.Loop() {
		testutil.IdleRSS(b) // resets the peak
		buf, err := NewDiskBuffer(total, Eviction{}, o)
		if err != nil {
			b.Fatal(err)
		}
		for range total / DefaultBatchSize {
			buf.AddBatch(batch)
		}
		if buf.Len() != total {
			b.Fatalf("holds %d", buf.Len())
		}
		fill := float64(testutil.ProcStatus(b, "VmHWM")) / (1 << 20)
		buf.Close()
		testutil.IdleRSS(b) // resets the peak
		buf, err = NewDiskBuffer(total, Eviction{}, o)
		if err != nil {
			b.Fatal(err)
		}
		got := buf.Batch(nil, DefaultBatchSize)
		if buf.Len() != total-DefaultBatchSize || len(got) != DefaultBatchSize {
			b.Fatalf("reopened with %d", buf.Len())
		}
		buf.Reject(got)
		reopen := float64(testutil.ProcStatus(b, "VmHWM")) / (1 << 20)
		bytes := buf.Bytes()
		buf.Close()
		os.RemoveAll(dir)
		b.ReportMetric(fill, "fill-peak-RSS-MiB")
		b.ReportMetric(reopen, "reopen-peak-RSS-MiB")
		b.ReportMetric(float64(bytes)/total, "disk-B/metric")
		if fill > 64 || reopen > 64 {
			b.Fatalf("peak RSS %.1f MiB filling, %.1f MiB reopening: over 64 MiB", fill, reopen)
		}
	}
}
