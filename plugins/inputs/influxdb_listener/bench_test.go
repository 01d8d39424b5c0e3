package influxdblistener

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"unsafe"

	"github.com/morse-agent/morse"
)

// benchBody is 1000 realistic lines: four tags, five fields of mixed types.
func benchBody() []byte {
	var b bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&b, "system_disk,device=nvme0n1p%d,fstype=ext4,host=web-%02d.prod.example.com,region=eu-west-1 "+
			"used_percent=%d.41234567,free=214748364800u,inodes_used=%di,mode=\"rw\",healthy=true %d\n",
			i%4, i%50, i%100, 1234567+i, 1700000000123456789+int64(i))
	}
	return b.Bytes()
}

// reusable is a request body that can be read again, so that the benchmark measures the
// handler and not the building of requests.
type reusable struct{ bytes.Reader }

func (*reusable) Close() error { return nil }

// nopWriter is a ResponseWriter that keeps only the status.
type nopWriter struct {
	h      http.Header
	status int
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(code int)        { w.status = code }

// BenchmarkHTTPWrite sends 1000-line bodies through the write handler into an accumulator
// that only counts; with-room's accumulator is also a morse.RoomWaiter that always has room,
// so it measures what looking at the outputs every waitEvery metrics costs.
func BenchmarkHTTPWrite(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchWrite(b, &counting{}) })
	b.Run("with-room", func(b *testing.B) { benchWrite(b, &roomy{}) })
}

// roomy is an accumulator whose outputs always have room.
type roomy struct{ counting }

// WaitForRoom returns at once.
func (*roomy) WaitForRoom(context.Context) error { return nil }

func benchWrite(b *testing.B, acc interface {
	morse.Accumulator
	added() int64
}) {
	h := handlerOnly(b, acc)
	data := benchBody()
	body := &reusable{}
	req := httptest.NewRequest("POST", "/write?db=bench&precision=ns", body)
	w := &nopWriter{h: http.Header{}}
	serve := func() {
		body.Reset(data)
		req.Body, req.ContentLength = body, int64(len(data))
		clear(w.h)
		h.ServeHTTP(w, req)
		if w.status != http.StatusNoContent {
			b.Fatalf("status %d", w.status)
		}
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
	b.ReportMetric(float64(acc.added())/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(testing.AllocsPerRun(5, serve)/1000, "allocs/line")
}

// keeping is an accumulator that keeps every metric, as an output's buffer does.
type keeping struct {
	counting
	kept  []morse.Metric
	lines bool
}

func (k *keeping) AddMetric(m morse.Metric) { k.kept = append(k.kept, m); k.n.Add(1) }
func (k *keeping) PrefersLines() bool       { return k.lines }

// BenchmarkRetainedPerLine reports the heap that the metrics of a write keep once the write
// is over, per line: what they hold of their own, since the read buffer is reused for the
// next write. Lines of 164 B (benchBody), as parsed metrics and as line metrics, whose text
// is copied into shared 2 KiB blocks.
func BenchmarkRetainedPerLine(b *testing.B) {
	for _, lines := range []bool{false, true} {
		b.Run(fmt.Sprintf("line-metrics=%v", lines), func(b *testing.B) {
			data := bytes.Repeat(benchBody(), 10)
			for b.Loop() {
				acc := &keeping{lines: lines}
				h := handlerOnly(b, acc)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				req := httptest.NewRequest("POST", "/write?db=x", bytes.NewReader(data))
				w := &nopWriter{h: http.Header{}}
				h.ServeHTTP(w, req)
				runtime.GC()
				runtime.ReadMemStats(&after)
				if w.status != http.StatusNoContent || len(acc.kept) != 10000 {
					b.Fatalf("status %d, %d metrics", w.status, len(acc.kept))
				}
				slice := int64(cap(acc.kept)) * int64(unsafe.Sizeof(morse.Metric{}))
				b.ReportMetric(float64(int64(after.HeapAlloc-before.HeapAlloc)-slice)/10000, "retained-B/line")
				b.ReportMetric(float64(len(data))/10000, "text-B/line")
				runtime.KeepAlive(acc)
			}
		})
	}
}
