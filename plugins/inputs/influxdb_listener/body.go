package influxdblistener

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/freelist"
	"github.com/morse-agent/morse/selfstat"
)

// A body is parsed as it arrives, through a chain of readers: the connection, counted
// (countingReader); gzip, when the body is compressed; max_body_size, counted after
// decompression (limitReader); and the wait for room in the outputs (gate). The parser reads
// the end of that chain into a pooled chunk buffer, so a request holds one chunk, the gzip
// state and at most one line of max_line_size, whatever the size of its body.

// chunkSize is the parser's read size. 64 KiB holds a few hundred ordinary lines, so the
// per-read costs (the wait for room, the carry of a partial line to the next read) are paid
// once per few hundred lines.
const chunkSize = 64 << 10

// chunks keeps the chunk buffers, shared by the listeners of the process. A buffer that
// grew for a long line is left to the garbage collector: a line of max_line_size should not
// pin that much memory for good.
var chunks = freelist.List[[]byte]{Max: keptBuffers, New: func() *[]byte {
	b := make([]byte, 0, chunkSize)
	return &b
}}

func getChunk() *[]byte { return chunks.Get() }

func putChunk(b *[]byte) {
	if cap(*b) == chunkSize {
		*b = (*b)[:0]
		chunks.Put(b)
	}
}

// errTooLarge ends a body that passes max_body_size; the answer is 413.
var errTooLarge = errors.New("http: request body too large")

// errBusy ends a body whose wait for room in the outputs passed backpressure_max_wait; the
// answer is 503.
var errBusy = errors.New("the outputs have no room")

// gzipPool holds gzip readers, each about 40 KiB of inflate state.
var gzipPool sync.Pool // of *gzip.Reader

// openBody returns the body as the parser reads it, and a function that releases what it
// holds. The error comes with its status code.
func (h *handler) openBody(r *http.Request) (io.Reader, func(), int, error) {
	limit := int64(h.l.MaxBodySize)
	gz := false
	switch enc := r.Header.Get("Content-Encoding"); strings.ToLower(enc) {
	case "", "identity":
	case "gzip":
		gz = true
	default:
		return nil, nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content encoding %q: send identity or gzip", enc)
	}
	if !gz && r.ContentLength > limit {
		return nil, nil, http.StatusRequestEntityTooLarge, errTooLarge
	}
	var src io.Reader = &countingReader{r: r.Body, c: h.l.c.bytes}
	release := func() {}
	if gz {
		// The limit holds for the bytes that arrive too, as Telegraf's http.MaxBytesReader
		// does: empty deflate blocks decompress to nothing, and would let a body of any size
		// stream in for as long as read_timeout allows.
		src = &limitReader{r: src, left: limit}
		zr, err := getGzip(src)
		if err != nil {
			return nil, nil, http.StatusBadRequest, err
		}
		src, release = zr, func() { gzipPool.Put(zr) }
	}
	return &limitReader{r: src, left: limit}, release, 0, nil
}

func getGzip(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := gzipPool.Get().(*gzip.Reader); ok {
		if err := zr.Reset(r); err != nil {
			gzipPool.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(r)
}

// countingReader counts the bytes that arrive, before any decompression.
type countingReader struct {
	r io.Reader
	c *selfstat.Counter
}

// Read reads and counts.
func (cr *countingReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	cr.c.Add(int64(n))
	return n, err
}

// limitReader passes at most left bytes and then ends with errTooLarge, unless the body ends
// there. It reads one byte beyond the limit to tell the two apart, and withholds that byte,
// so the parser sees exactly max_body_size bytes of a body that is too large.
type limitReader struct {
	r    io.Reader
	left int64
}

// Read reads within the limit.
func (lr *limitReader) Read(p []byte) (int, error) {
	if lr.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > lr.left+1 {
		p = p[:lr.left+1]
	}
	n, err := lr.r.Read(p)
	lr.left -= int64(n)
	if lr.left < 0 {
		return n - 1, errTooLarge
	}
	return n, err
}

// waitEvery is how many metrics a write adds between two waits for room, as the TCP
// listener does (its addEvery): a chunk holds hundreds of lines, and a dozen writes adding
// a whole chunk each after one look at the outputs would overrun the room between their
// water marks. The metrics are handed over in batches of as many, before each wait.
const waitEvery = 32

// gate waits for room in the outputs, within the request's wait budget: before each read of
// the body, and every waitEvery metrics. It reads nothing more of the body while it waits,
// so a sender that outruns the outputs is held back by TCP's flow control. While it waits
// it extends the connection's deadlines by as long as it waited, so that read_timeout and
// write_timeout bound the reading and the answering, not the waiting on a healthy output.
// Once the budget is spent it refuses the rest of the body: Read fails with errBusy, and
// metrics parsed from what was already read are not added.
type gate struct {
	src    io.Reader
	acc    morse.Accumulator
	rc     *http.ResponseController
	start  time.Time     // when the request was handed over, which the deadlines count from
	read   time.Duration // read_timeout
	write  time.Duration // write_timeout
	budget time.Duration // backpressure_max_wait
	waited time.Duration
	wait   *selfstat.Counter // nanoseconds waited, for every request
	// beforeWait hands over the metrics parsed so far, before each wait for room.
	beforeWait func()
	ctx        waitCtx
	err        error // why the rest of the body is refused
}

// Read waits for room, then reads.
func (g *gate) Read(p []byte) (int, error) {
	if g.hold(); g.err != nil {
		return 0, g.err
	}
	return g.src.Read(p)
}

// hold waits for room in the outputs with what is left of the budget; on failure it sets
// g.err.
func (g *gate) hold() {
	if g.beforeWait != nil && g.err == nil && g.budget > g.waited {
		g.beforeWait()
	}
	g.waitOn(morse.WaitForRoom)
}

// kept waits, with what is left of the budget, until no output that the write reached holds
// its metrics in memory only because its disk buffer's disk refused them (morse.DiskWaiter),
// so that a 204 means the metrics are where the outputs promise to keep them. The parse has
// handed every metric over by then. On failure it sets g.err, and the answer is 503.
func (g *gate) kept() error {
	g.beforeWait = nil
	if g.err == nil && g.budget <= g.waited && morse.WaitForDisk(doneCtx, g.acc) == nil {
		return nil // the waits for room spent the budget, but nothing waits for a disk
	}
	g.waitOn(morse.WaitForDisk)
	return g.err
}

// doneCtx is a context that has ended, for asking whether a wait would block.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// waitOn waits on the accumulator with what is left of the budget; on failure it sets g.err.
func (g *gate) waitOn(on func(context.Context, morse.Accumulator) error) {
	if g.err != nil {
		return
	}
	left := g.budget - g.waited
	if left <= 0 {
		g.err = errBusy
		return
	}
	g.ctx.left = left
	err := on(&g.ctx, g.acc)
	d, blocked := g.ctx.end()
	if !blocked {
		return // the outputs had room: no timer, no clock read
	}
	g.waited += d
	g.wait.Add(int64(d))
	// A deadline set before the wait would not do: if the wait ends early, the deadline
	// would be later than read_timeout allows.
	_ = g.rc.SetReadDeadline(g.start.Add(g.read + g.waited))
	_ = g.rc.SetWriteDeadline(g.start.Add(g.write + g.waited))
	switch {
	case err == nil:
	case g.ctx.Context.Err() != nil:
		g.err = fmt.Errorf("the request ended while it waited for room: %w", g.ctx.Context.Err())
	default:
		g.waited = g.budget // the wait ended by the budget, maybe a little early by the clock
		g.err = errBusy
	}
}

// waitCtx is the context of one wait for room: the request's context, which also ends when
// the wait budget runs out. A RoomWaiter looks at its context only when it has to block, so
// the timer and the clock are started then: a wait that returns at once, the usual case,
// costs neither.
type waitCtx struct {
	context.Context // the request's
	left            time.Duration

	mu     sync.Mutex
	timed  context.Context
	cancel context.CancelFunc
	begun  time.Time
}

// arm starts the budget's timer, once per wait.
func (c *waitCtx) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		c.begun = time.Now()
		c.timed, c.cancel = context.WithTimeout(c.Context, c.left)
	}
	return c.timed
}

// Done is the budget's, or the request's, end.
func (c *waitCtx) Done() <-chan struct{} { return c.arm().Done() }

// Err is why the wait's context ended.
func (c *waitCtx) Err() error { return c.arm().Err() }

// Deadline is when the budget runs out, if not the request's deadline before.
func (c *waitCtx) Deadline() (time.Time, bool) { return c.arm().Deadline() }

// end stops the timer and says how long the wait was, if it blocked.
func (c *waitCtx) end() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		return 0, false
	}
	c.cancel()
	c.timed, c.cancel = nil, nil
	return time.Since(c.begun), true
}
