package httpout

import (
	"compress/gzip"
	"sync"

	"github.com/morse-agent/morse"
)

// gzipWriters are reused: a gzip.Writer holds about 800 KiB of state, far too much to make
// per request. BestSpeed gets most of the size reduction on line protocol, which repeats
// itself, for a fraction of the CPU.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

type appendWriter struct{ b []byte }

// Write appends p.
func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// AppendGzip appends src, compressed as one gzip stream, to dst and returns the result.
func AppendGzip(dst, src []byte) []byte {
	aw := &appendWriter{b: dst}
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(aw)
	_, _ = zw.Write(src) // writes to memory cannot fail
	_ = zw.Close()
	zw.Reset(nil)
	gzipWriters.Put(zw)
	return aw.b
}

// Body builds the request bodies of one write in flight in buffers that it reuses: the line
// protocol, and its gzip form. The zero value is ready.
type Body struct {
	plain, zipped []byte
	failed        []int // positions of the metrics the last Build could not write
}

// Build writes metrics with appendMetric (a serializer's AppendMetric), each after prepare,
// and gzips the result when zip is set. It returns the body to send, how many metrics could
// not be written, and the first such error; Failed gives their positions. The body is valid
// until the next Build.
func (b *Body) Build(metrics []morse.Metric, appendMetric func([]byte, morse.Metric) ([]byte, error),
	prepare func(morse.Metric) morse.Metric, zip bool) (body []byte, dropped int, first error) {
	buf := b.plain[:0]
	b.failed = b.failed[:0]
	for i, m := range metrics {
		var err error
		if buf, err = appendMetric(buf, prepare(m)); err != nil {
			dropped++
			b.failed = append(b.failed, i)
			if first == nil {
				first = err
			}
		}
	}
	b.plain = buf
	if len(buf) == 0 || !zip {
		return buf, dropped, first
	}
	b.zipped = AppendGzip(b.zipped[:0], buf)
	return b.zipped, dropped, first
}

// Failed is the positions, in the metrics given to the last Build, of those it could not
// write, in order. It is valid until the next Build.
func (b *Body) Failed() []int { return b.failed }

// PlainLen is the size of the last body before compression.
func (b *Body) PlainLen() int { return len(b.plain) }

// maxKeptBody is how large a Body's buffers may be and still be kept for later writes:
// enough for batches of 10,000 ordinary lines, gzipped or not.
const maxKeptBody = 8 << 20

// Keep reports whether the body's buffers are small enough to be kept for the writes after
// this one. Buffers that grew for an unusually large batch are left to the garbage
// collector rather than held for as long as the process runs.
func (b *Body) Keep() bool { return cap(b.plain)+cap(b.zipped) <= maxKeptBody }
