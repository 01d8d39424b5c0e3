// Package httpwrite holds what outputs that POST line protocol share: gzip into a reused
// buffer, the server's Retry-After read into a wait, and failover between several URLs.
// It knows no serializer: outputs pass their own.
package httpwrite

import (
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
)

// MaxRetryAfter caps a server's Retry-After, so that a bogus answer cannot park an output
// for days; the agent's own backoff caps at a minute, so this is generous on purpose.
const MaxRetryAfter = time.Hour

// RetryAfter reads a Retry-After header: seconds, or an HTTP date. Zero means none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(secs, 0), int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

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

// Failover remembers which of several URLs answered last, so that writes start there. The
// zero value starts at the first URL; it is safe for concurrent use.
type Failover struct{ current atomic.Int32 }

// Do calls try with the index of each of n URLs in turn, starting at the one that answered
// last, until one answers (try returns nil) or ctx ends. try's error is a transport error:
// refused, reset, timed out. Do returns the index that answered and the errors of the URLs
// tried before it (nil when the first answered), or -1 and every error when none did. The
// first URL that answers decides: a server that refused a write must not see it elsewhere.
func (f *Failover) Do(ctx context.Context, n int, try func(i int) error) (int, error) {
	var errs []error
	current := int(f.current.Load())
	for k := range n {
		i := (current + k) % n
		err := try(i)
		if err == nil {
			if i != current {
				f.current.CompareAndSwap(int32(current), int32(i))
			}
			return i, errors.Join(errs...)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return -1, errors.Join(errs...)
}

// Current is the index of the URL that answered last.
func (f *Failover) Current() int { return int(f.current.Load()) }

// Reset starts again at the first URL.
func (f *Failover) Reset() { f.current.Store(0) }

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
