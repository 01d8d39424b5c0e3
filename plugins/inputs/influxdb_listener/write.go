package influxdblistener

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/selfstat"
)

// serveWrite handles /write (v1) and /api/v2/write (v2): check, read, parse, answer.
func (h *handler) serveWrite(w http.ResponseWriter, r *http.Request, v2 bool) {
	if !allow(w, r, http.MethodPost) {
		return
	}
	q := r.URL.Query()
	if !h.authorized(w, r, q) {
		return
	}
	h.l.c.writes.Incr()
	t, code, err := writeParams(q, v2)
	if err != nil {
		httpError(w, err.Error(), code)
		return
	}
	body, code, err := h.readBody(r)
	defer putBuffer(body)
	if err != nil {
		if code == http.StatusRequestEntityTooLarge {
			h.l.c.tooLarge.Incr()
		}
		httpError(w, err.Error(), code)
		return
	}
	out := h.parse(body.Bytes(), t)
	h.l.c.lines.Add(int64(out.lines))
	if out.errors == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.l.c.parseErr.Add(int64(out.errors))
	msg := out.message()
	h.l.errLog.Log(h.l.log, slog.LevelWarn, "rejected lines in a write", "from", r.RemoteAddr, "error", msg)
	httpError(w, msg, http.StatusBadRequest)
}

// target is where a write goes: its timestamp precision, database and retention policy.
type target struct {
	precision time.Duration
	db, rp    string
}

// writeParams reads the query parameters of a write with InfluxDB 1.8's rules and words.
// In v2, bucket is "db" or "db/rp" and org is ignored.
func writeParams(q url.Values, v2 bool) (target, int, error) {
	var t target
	prec := q.Get("precision")
	if !v2 {
		p, err := influx.ParsePrecision(prec)
		t.precision, t.db, t.rp = p, q.Get("db"), q.Get("rp")
		return t, http.StatusBadRequest, err
	}
	switch prec {
	case "", "ns":
		t.precision = time.Nanosecond
	case "us":
		t.precision = time.Microsecond
	case "ms":
		t.precision = time.Millisecond
	case "s":
		t.precision = time.Second
	default:
		return t, http.StatusBadRequest, fmt.Errorf("invalid precision %q (use ns, us, ms or s)", prec)
	}
	bucket := q.Get("bucket")
	db, rp, _ := strings.Cut(bucket, "/")
	if db == "" && bucket != "" {
		return t, http.StatusNotFound, fmt.Errorf("bucket name %q is in db/rp form but has an empty database", bucket)
	}
	t.db, t.rp = db, rp
	return t, 0, nil
}

// errTooLarge is the answer to a body over max_body_size, in Telegraf's words.
var errTooLarge = errors.New("http: request body too large")

// Bodies are read into pooled buffers, so that a steady stream of writes reuses the same
// memory. A buffer that grew beyond maxPooled is left to the garbage collector rather than
// kept for the one client that sends such bodies.
const maxPooled = 4 << 20

var (
	bufPool  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipPool sync.Pool // of *gzip.Reader
)

func putBuffer(b *bytes.Buffer) {
	if b != nil && b.Cap() <= maxPooled {
		b.Reset()
		bufPool.Put(b)
	}
}

// readBody reads the whole body, decompressing gzip, and refuses it with 413 once it grows
// beyond max_body_size: the limit applies to what the parser would see, so a gzip bomb is
// stopped after max_body_size bytes of output. It returns the buffer even on error, for
// putBuffer.
func (h *handler) readBody(r *http.Request) (*bytes.Buffer, int, error) {
	limit := int64(h.l.MaxBodySize)
	gz := false
	switch enc := r.Header.Get("Content-Encoding"); strings.ToLower(enc) {
	case "", "identity":
	case "gzip":
		gz = true
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content encoding %q: send identity or gzip", enc)
	}
	if !gz && r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, errTooLarge
	}
	buf := bufPool.Get().(*bytes.Buffer)
	var src io.Reader = &countingReader{r: r.Body, c: h.l.c.bytes}
	if gz {
		zr, err := getGzip(src)
		if err != nil {
			return buf, http.StatusBadRequest, err
		}
		defer gzipPool.Put(zr)
		src = zr
	} else if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	switch {
	case int64(buf.Len()) > limit:
		return buf, http.StatusRequestEntityTooLarge, errTooLarge
	case err != nil:
		return buf, http.StatusBadRequest, err
	}
	return buf, 0, nil
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

// outcome sums up the parse of one write.
type outcome struct {
	lines, metrics, errors int
	first                  *influx.LineError
}

// message words the answer to a write with rejected lines; see the package documentation.
func (o outcome) message() string {
	e := o.first
	if o.metrics > 0 {
		return fmt.Sprintf("partial write: line %d: %s (%d of %d lines rejected) dropped=%d",
			e.Line, e.Error(), o.errors, o.lines, o.errors)
	}
	return fmt.Sprintf("%s (line %d; %d of %d lines rejected)", e.Error(), e.Line, o.errors, o.lines)
}

// metricBatchSize is how many metrics of a write are handed to the accumulator at once:
// an output's disk buffer writes each hand-over as one record, with one write(2), and a
// memory buffer takes its lock once for it.
const metricBatchSize = 1000

// parse parses a body and hands its metrics to the accumulator, with the database and
// retention policy tags when they are configured, in batches; all of them before it
// returns, so that the write is answered only once its metrics are buffered. With
// max_line_size set, the streaming parser enforces it; otherwise the whole body, already
// bounded, is parsed in one go.
func (h *handler) parse(body []byte, t target) outcome {
	mb := h.batches.Get().(*morse.MetricBatch)
	defer h.batches.Put(mb)
	defer mb.Flush()
	return h.parseTo(body, t, mb.Add)
}

// parseTo parses a body, handing each metric to add.
func (h *handler) parseTo(body []byte, t target, add func(morse.Metric)) outcome {
	emit := add
	p := influx.Parser{Precision: t.precision, MaxLineBytes: int(h.l.MaxLineSize), LineMetrics: h.lineMode}
	dbTag, rpTag := h.l.DatabaseTag, h.l.RetentionPolicyTag
	if (dbTag != "" && t.db != "") || (rpTag != "" && t.rp != "") {
		// Adding a tag would only expand every line metric.
		p.LineMetrics = nil
		emit = func(m morse.Metric) {
			if dbTag != "" && t.db != "" {
				m = m.WithTag(dbTag, t.db)
			}
			if rpTag != "" && t.rp != "" {
				m = m.WithTag(rpTag, t.rp)
			}
			add(m)
		}
	}
	if h.l.MaxLineSize <= 0 {
		res := p.Parse(body, emit)
		return outcome{lines: res.Lines, metrics: res.Metrics, errors: res.Errors, first: res.First}
	}
	var o outcome
	count := func(m morse.Metric) {
		o.lines++
		o.metrics++
		emit(m)
	}
	onErr := func(e influx.LineError) {
		o.lines++
		o.errors++
		if o.first == nil {
			o.first = &e
		}
	}
	_ = p.ParseReader(bytes.NewReader(body), count, onErr) // a bytes.Reader ends in io.EOF only
	return o
}
