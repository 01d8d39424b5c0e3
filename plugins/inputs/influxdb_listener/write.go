package influxdblistener

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// serveWrite handles /write (v1) and /api/v2/write (v2): check, then parse the body as it
// arrives and answer.
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
	body, release, code, err := h.openBody(r)
	if err != nil {
		h.refuse(w, err, code, v2, outcome{})
		return
	}
	defer release()
	var g *gate
	if h.waits {
		g = &gate{src: body, acc: h.acc, rc: http.NewResponseController(w), start: time.Now(),
			read: time.Duration(h.l.ReadTimeout), write: time.Duration(h.l.WriteTimeout),
			budget: time.Duration(h.l.BackpressureMaxWait), wait: h.l.c.waitNs}
		g.ctx.Context = r.Context()
		body = g
	}
	out, err := h.parse(body, t, g)
	if err == nil && g != nil {
		err = g.kept()
	}
	h.l.c.lines.Add(int64(out.lines))
	h.l.c.parseErr.Add(int64(out.errors))
	h.l.c.tooLong.Add(int64(out.tooLong))
	switch {
	case errors.Is(err, errTooLarge):
		h.refuse(w, err, http.StatusRequestEntityTooLarge, v2, out)
	case errors.Is(err, errBusy):
		h.refuse(w, err, http.StatusServiceUnavailable, v2, out)
	case err != nil:
		httpError(w, err.Error(), http.StatusBadRequest)
	case out.errors == 0:
		w.WriteHeader(http.StatusNoContent)
	default:
		msg := out.message()
		h.l.errLog.Log(h.l.log, slog.LevelWarn, "rejected lines in a write", "from", r.RemoteAddr, "error", msg)
		httpError(w, msg, http.StatusBadRequest)
	}
}

// refuse answers a write that ended before its body did: 413 for a body over max_body_size,
// 503 for one whose wait for room passed backpressure_max_wait. The lines parsed before were
// kept, and the answer says how many, so that a sender can tell what to send again.
func (h *handler) refuse(w http.ResponseWriter, err error, code int, v2 bool, out outcome) {
	var msg, v2code string
	switch code {
	case http.StatusRequestEntityTooLarge:
		h.l.c.tooLarge.Incr()
		msg = fmt.Sprintf("%s: more than max_body_size (%d bytes, counted after decompression); %s before the limit",
			errTooLarge, int64(h.l.MaxBodySize), out.kept())
		v2code = "request too large"
	case http.StatusServiceUnavailable:
		h.l.c.busy.Incr()
		wait := retryAfter(time.Duration(h.l.BackpressureMaxWait))
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		if morse.WaitForDisk(doneCtx, h.acc) != nil {
			// The lines parsed may sit in memory only, behind a disk that refuses writes:
			// "accepted" would let a sender that resends only the rest lose them on a crash.
			// Points written twice overwrite themselves in InfluxDB, so the whole write is
			// safe to send again.
			msg = fmt.Sprintf("an output's disk buffer cannot write to its disk and holds metrics in memory only; "+
				"%d lines were parsed but are not safely kept within backpressure_max_wait (%s): send the whole write again after %d s",
				out.metrics, time.Duration(h.l.BackpressureMaxWait), wait)
		} else {
			msg = fmt.Sprintf("the outputs are full and did not make room within backpressure_max_wait (%s); %s before the wait, retry the rest after %d s",
				time.Duration(h.l.BackpressureMaxWait), out.kept(), wait)
		}
		v2code = "unavailable"
	default:
		httpError(w, err.Error(), code)
		return
	}
	if v2 {
		httpErrorV2(w, msg, v2code, code)
		return
	}
	httpError(w, msg, code)
}

// retryAfter is the Retry-After of a 503, in whole seconds: as long as the request waited in
// vain, for the outputs were full for that long, and at least one second.
func retryAfter(maxWait time.Duration) int {
	return max(1, int((maxWait+time.Second-1)/time.Second))
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

// outcome sums up the parse of one write.
type outcome struct {
	lines, metrics, errors int
	tooLong                int // of the errors, lines longer than max_line_size
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

// kept says how many lines of a write that ended early were kept, and rejected if any.
func (o outcome) kept() string {
	s := fmt.Sprintf("%d lines accepted", o.metrics)
	if o.errors > 0 {
		s += fmt.Sprintf(" and %d rejected (first: line %d: %s)", o.errors, o.first.Line, o.first.Error())
	}
	return s
}

// metricBatchSize is how many metrics of a write are handed to the accumulator at once:
// an output's disk buffer writes each hand-over as one record, with one write(2), and a
// memory buffer takes its lock once for it. With backpressure, the metrics are handed over
// before each wait for room instead, every waitEvery metrics: the water marks see only what
// was handed over, and metrics held back in batches of 1000 made a slow sink's buffer
// evict (TestASlowSinkSlowsTheHTTPSender) even with a wait every 32.
const metricBatchSize = 1000

// parse parses a body as it arrives and hands its metrics to the accumulator, with the
// database and retention policy tags when they are configured, in batches; all of them
// before it returns, so that the write is answered only once its metrics are buffered. The
// error is the body's read error, if any; the complete lines before it were parsed and
// kept. With g, it waits for room every waitEvery metrics, and once g refuses the rest,
// adds nothing more.
func (h *handler) parse(body io.Reader, t target, g *gate) (outcome, error) {
	mb := h.batches.Get()
	defer h.batches.Put(mb)
	defer mb.Flush()
	if g != nil {
		g.beforeWait = mb.Flush // a metric held in the batch would wait with the write
	}
	emit := mb.Add
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
			mb.Add(m)
		}
	}
	var o outcome
	count := func(m morse.Metric) {
		o.lines++
		o.metrics++
		emit(m)
	}
	if g != nil {
		count = func(m morse.Metric) {
			if g.err != nil {
				return // the rest of a chunk read before the write was refused
			}
			o.lines++
			o.metrics++
			emit(m)
			if o.metrics%waitEvery == 0 {
				g.hold()
			}
		}
	}
	onErr := func(e influx.LineError) {
		o.lines++
		o.errors++
		if errors.Is(e.Err, influx.ErrLineTooLong) {
			o.tooLong++
		}
		if o.first == nil {
			o.first = &e
		}
	}
	chunk := getChunk()
	var err error
	*chunk, err = p.ParseStream(body, *chunk, count, onErr)
	putChunk(chunk)
	if err == nil && g != nil && g.err != nil {
		// The gate refused the rest of the last read, which net/http hands over together
		// with the body's end, so the parser saw no read error: the write still ends early.
		err = g.err
	}
	return o, err
}
