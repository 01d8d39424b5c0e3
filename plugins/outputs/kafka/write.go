package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/backoff"
	"github.com/morse-agent/morse/internal/throttle"
	common "github.com/morse-agent/morse/plugins/common/kafka"
)

// The reasons under which the Kafka output drops metrics, beside morse.ReasonSerialize.
const (
	// ReasonMessageTooLarge: a single field is larger than max_message_bytes (or than the
	// broker's or topic's max.message.bytes) even in a message of its own.
	ReasonMessageTooLarge = "message_too_large"
	// ReasonInvalidTimestamp: the broker refuses the record's time (its
	// log.message.timestamp.*.max.ms window).
	ReasonInvalidTimestamp = "invalid_timestamp"
	// ReasonInvalidRecord: the broker refuses the record itself, such as a record without a
	// key on a compacted topic.
	ReasonInvalidRecord = "invalid_record"
	// ReasonInvalidTopic: the topic name, from topic_tag or topic_suffix, is not one that
	// Kafka allows.
	ReasonInvalidTopic = "invalid_topic"
)

// recordOverhead bounds what a record in a batch of its own adds to its key, value and
// headers: the batch header (61 bytes), and the record's length, attributes, timestamp and
// offset deltas and length fields, as varints.
const recordOverhead = 61 + 32

// minMessageBytes is the smallest max_message_bytes accepted: a message must hold at least a
// small metric besides the overhead.
const minMessageBytes = 256

// retryInitial and retryMax bound the backoff between passes over the records of a batch
// that could not be written while others of it were.
const (
	retryInitial = time.Second
	retryMax     = time.Minute
)

// writer holds what writes share: throttled logs, the count of left-out parts, and spare
// jobs.
type writer struct {
	k            *Kafka
	dropLog      *throttle.Throttle
	retryLog     *throttle.Throttle
	headerLog    *throttle.Throttle
	skippedParts atomic.Int64
	jobs         sync.Pool // of *job, so that a write reuses the slices of an earlier one
}

func (w *writer) init(k *Kafka) {
	w.k = k
	if w.dropLog == nil {
		w.jobs.New = func() any { return &job{} }
		w.dropLog = throttle.New(10 * time.Second)
		w.retryLog = throttle.New(10 * time.Second)
		w.headerLog = throttle.New(time.Minute)
	}
}

// SkippedParts is the number of parts left out of metrics whose other parts were written:
// fields that fit no message even alone, and parts of a split metric that the broker
// refused for good.
func (k *Kafka) SkippedParts() int64 { return k.w.skippedParts.Load() }

// firstReason is the first reason recorded for any metric.
func firstReason(ms []metricState) string {
	for _, st := range ms {
		if st.reason != "" {
			return st.reason
		}
	}
	return ""
}

// Write sends each metric of the batch as one message (or several, when it is larger than
// max_message_bytes: its fields are split across messages with the same name, tags and
// time) and waits until the brokers acknowledged them as required_acks asks.
//
// It returns nil when every metric was written; a *morse.PartialWriteError with exact
// counts, or a permanent error, for metrics that can never be written (see the Reason
// constants); a retryable error when nothing of the batch was stored, so that the agent
// retries it with its backoff (brokers down, unknown topic with auto-create off, failed
// authentication or authorization). When part of the batch was stored and the rest failed
// for a reason that may pass, it retries that rest itself, with backoff, until it is
// stored or ctx ends: handing the whole batch back would store the first part twice.
func (k *Kafka) Write(ctx context.Context, batch []morse.Metric) error {
	cl := k.client()
	if cl == nil {
		return errors.New("kafka: Write called before Connect or after Close")
	}
	j := k.w.prepare(batch)
	// The job goes back to the pool only when the client holds none of its records: a
	// write cut short leaves records that the client may still send.
	reuse := true
	defer func() {
		if reuse {
			k.w.release(j)
		}
	}()
	pending := j.producible()
	single := false
	var retry *backoff.Policy
	for len(pending) > 0 {
		if err := j.produce(ctx, cl, pending, single, time.Duration(k.Timeout)); err != nil {
			reuse = false
			return morse.Retryable(fmt.Errorf("kafka: write cut short with %d of %d records unconfirmed: %w", j.unsettled(), len(j.recs), err), 0)
		}
		alone, again, firstErr := j.sortOut(pending, single)
		if len(alone) > 0 {
			// A batch the broker refused as a whole (too large, a bad timestamp) is
			// retried a record at a time, to find the records at fault; the records that
			// failed for a reason that may pass go along, rather than being forgotten.
			pending, single = append(alone, again...), true
			continue
		}
		if len(again) == 0 {
			break
		}
		if errors.Is(firstErr, context.DeadlineExceeded) {
			firstErr = fmt.Errorf("no broker took the records within the timeout (%s): %w", time.Duration(k.Timeout), firstErr)
		}
		if !j.storedAny {
			return morse.Retryable(fmt.Errorf("kafka: %w", unauthorized(firstErr)), 0)
		}
		if retry == nil {
			retry = backoff.New(retryInitial, retryMax)
		}
		k.w.retryLog.Log(k.logger(), slog.LevelWarn, "kafka: part of a batch is stored, retrying the rest",
			"unstored_records", len(again), "records", len(j.recs), "error", firstErr)
		if err := sleep(ctx, retry.Next()); err != nil {
			return morse.Retryable(fmt.Errorf("kafka: write cut short with %d of %d records unstored: %w", len(again), len(j.recs), unauthorized(firstErr)), 0)
		}
		pending, single = again, false
	}
	return j.result(k)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// job is one Write: its records and what became of them and of their metrics.
type job struct {
	recs    []kgo.Record
	owner   []int32 // the batch index of each record's metric
	errs    []error // each record's last result, set by the promise
	metrics []metricState
	buf     []byte // the records' keys and values
	spans   []span
	// left counts the records of the current pass not yet answered; done closes when it
	// reaches zero.
	left      atomic.Int64
	done      chan struct{}
	storedAny bool
}

// metricState is what became of one metric of the batch.
type metricState struct {
	records int32 // its records
	stored  int32 // records acknowledged
	dropped int32 // records given up for good
	skipped int32 // fields that fit no message
	reason  string
	err     error // why the metric, or a record of it, was dropped
}

// sortOut settles the answers of a pass and returns the records to send again: alone, those
// refused with their batch; again, those that may pass later, with the first such error.
func (j *job) sortOut(pending []int32, single bool) (alone, again []int32, firstErr error) {
	for _, i := range pending {
		switch j.settle(i, single) {
		case settleAlone:
			alone = append(alone, i)
		case settleRetry:
			again = append(again, i)
			firstErr = cmpErr(firstErr, j.errs[i])
		default:
			continue
		}
		// What the client set on the record goes; it is produced afresh.
		r := &j.recs[i]
		*r = kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
	}
	return alone, again, firstErr
}

// Outcomes of one record in one pass.
const (
	settleDone  = iota // stored or dropped for good
	settleAlone        // refused with its batch: to be tried alone
	settleRetry        // may succeed later
)

// producible lists the records to send.
func (j *job) producible() []int32 {
	idx := make([]int32, len(j.recs))
	for i := range idx {
		idx[i] = int32(i)
	}
	return idx
}

// produce hands the records to the client and waits for every answer, or for ctx. With
// single, it sends one record at a time, so that each is a batch of its own.
//
// The records are produced under the timeout: those that no broker took by then fail with
// context.DeadlineExceeded. The client never fails a record that it has sent without an
// answer, since the broker may have stored it, so those are waited for, which is what
// keeps idempotent writes exactly once.
func (j *job) produce(ctx context.Context, cl *kgo.Client, idx []int32, single bool, timeout time.Duration) error {
	for n := 0; n < len(idx); {
		step := len(idx) - n
		if single {
			step = 1
		}
		j.left.Store(int64(step))
		j.done = make(chan struct{})
		pctx, cancel := context.WithTimeout(ctx, timeout)
		for _, i := range idx[n : n+step] {
			cl.Produce(pctx, &j.recs[i], j.promise)
		}
		select {
		case <-j.done:
			cancel()
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		}
		n += step
	}
	return nil
}

// promise records a record's answer. The client calls promises one at a time, and the
// records live in one slice, so a record's index is its distance from the first.
func (j *job) promise(r *kgo.Record, err error) {
	i := (uintptr(unsafe.Pointer(r)) - uintptr(unsafe.Pointer(&j.recs[0]))) / unsafe.Sizeof(kgo.Record{})
	j.errs[i] = err
	if j.left.Add(-1) == 0 {
		close(j.done)
	}
}

// unsettled counts the records whose last pass was not answered.
func (j *job) unsettled() int64 { return j.left.Load() }

// settle files record i's answer under its metric. alone tells that the record was sent in
// a batch of its own.
func (j *job) settle(i int32, alone bool) int {
	err := j.errs[i]
	st := &j.metrics[j.owner[i]]
	if err == nil {
		st.stored++
		j.storedAny = true
		return settleDone
	}
	reason, permanent, batchWide := classify(err)
	switch {
	case permanent && batchWide && !alone:
		return settleAlone
	case permanent:
		st.dropped++
		if st.err == nil {
			st.reason, st.err = reason, err
		}
		return settleDone
	}
	return settleRetry
}

// result turns what became of each metric into the write's error: nil, a partial write with
// exact counts, or a permanent error when no metric was written.
func (j *job) result(k *Kafka) error {
	written, dropped := 0, 0
	var reason string
	var first error
	var skipped int64
	for i := range j.metrics {
		st := &j.metrics[i]
		if st.stored > 0 {
			written++
			// Parts of a metric whose other parts were stored: fields that fit no
			// message, and split parts that the broker refused for good.
			skipped += int64(st.skipped + st.dropped)
			continue
		}
		dropped++
		if first == nil {
			reason, first = st.reason, st.err
		}
	}
	if skipped > 0 {
		k.w.skippedParts.Add(skipped)
		k.w.dropLog.Log(k.logger(), slog.LevelWarn, "kafka: parts of metrics left out, the rest of them written",
			"parts", skipped, "reason", firstReason(j.metrics), "max_message_bytes", k.maxMessageBytes())
	}
	if dropped == 0 {
		return nil
	}
	k.w.dropLog.Log(k.logger(), slog.LevelWarn, "kafka: metrics dropped", "metrics", dropped, "reason", reason, "error", first)
	first = fmt.Errorf("kafka: %w", first)
	if written == 0 {
		return morse.Permanent(reason, first)
	}
	return &morse.PartialWriteError{Written: written, Dropped: dropped, Reason: reason, Err: first}
}

// errTooLarge is why a field that fits no message is left out.
var errTooLarge = errors.New("a single field is larger than max_message_bytes allows")

// prepare turns the batch into records: topic, key, headers and time per metric, and the
// metric serialized into one value, or split into several under max_message_bytes.
func (w *writer) prepare(batch []morse.Metric) *job {
	k := w.k
	j := w.jobs.Get().(*job)
	j.metrics = slices.Grow(j.metrics[:0], len(batch))[:len(batch)]
	clear(j.metrics)
	j.recs, j.owner, j.spans = slices.Grow(j.recs[:0], len(batch)), slices.Grow(j.owner[:0], len(batch)), j.spans[:0]
	buf := j.buf[:0]
	lastTopic, checked := "", false
	start := time.Now()
	for i, m := range batch {
		st := &j.metrics[i]
		m, topic := k.topic(m)
		if !checked || topic != lastTopic { // an empty topic too is checked, and refused
			checked = false
			if err := common.ValidTopic(topic); err != nil {
				st.reason, st.err = ReasonInvalidTopic, err
				continue
			}
			lastTopic, checked = topic, true // most metrics of a batch share their topic
		}
		headers, err := k.headers(m)
		if err != nil {
			w.headerLog.Log(k.logger(), slog.LevelWarn, "kafka: a header template failed; the header is left out", "error", err)
		}
		keyStart := len(buf)
		var hasKey bool
		buf, hasKey = k.appendKey(buf, m)
		keyEnd := len(buf)
		limit := k.maxMessageBytes() - recordOverhead - (keyEnd - keyStart) - headerBytes(headers)
		var vals [][2]int
		buf, vals = w.serialize(buf, m, limit, st, false)
		ts := k.timestamp(m)
		for _, v := range vals {
			key := [2]int{keyStart, keyEnd}
			if !hasKey {
				key = [2]int{-1, -1}
			}
			j.spans = append(j.spans, span{key: key, val: v})
			j.recs = append(j.recs, kgo.Record{Topic: topic, Headers: headers, Timestamp: ts})
			j.owner = append(j.owner, int32(i))
			st.records++
		}
	}
	w.countSerialized(j, time.Since(start))
	// The values and keys share one buffer, which may have moved while it grew; they are
	// pointed into it only now.
	j.buf = buf
	for n, s := range j.spans {
		r := &j.recs[n]
		r.Value = buf[s.val[0]:s.val[1]:s.val[1]]
		if s.key[0] >= 0 {
			r.Key = buf[s.key[0]:s.key[1]:s.key[1]]
		}
	}
	j.errs = slices.Grow(j.errs[:0], len(j.recs))[:len(j.recs)]
	clear(j.errs)
	j.storedAny = false
	return j
}

// release returns a job whose records the client no longer holds to the pool. Its slices
// keep their room; the records' references into the batch's strings are dropped.
func (w *writer) release(j *job) {
	clear(j.recs)
	j.recs = j.recs[:0]
	w.jobs.Put(j)
}

// span locates a record's key and value in the job's buffer; a key of {-1, -1} is none.
type span struct{ key, val [2]int }

func headerBytes(hs []kgo.RecordHeader) int {
	n := 0
	for _, h := range hs {
		n += len(h.Key) + len(h.Value) + 10 // two length varints
	}
	return n
}

// serialize appends m to buf as one value no longer than limit, or splits its fields into
// halves, recursively, until every part fits, and returns the values' spans in buf. A metric
// that cannot be serialized, or of which no part fits, is marked dropped in st; a field that
// fits no message even alone, or a part that cannot be serialized (all of its floats NaN,
// say), is left out and counted in st.skipped.
func (w *writer) serialize(buf []byte, m morse.Metric, limit int, st *metricState, part bool) ([]byte, [][2]int) {
	start := len(buf)
	out, err := w.k.ser.AppendMetric(buf, m)
	if err == nil && len(out)-start <= limit {
		return out, [][2]int{{start, len(out)}}
	}
	// Only now are the fields counted: that takes a line metric apart, which the common
	// case above does not need.
	fields := len(m.Fields())
	switch {
	case err != nil:
		if part {
			st.skipped += int32(fields)
		}
		st.reason, st.err = morse.ReasonSerialize, cmpErr(st.err, err)
		return buf, nil
	case fields <= 1:
		st.skipped++
		st.reason, st.err = ReasonMessageTooLarge, cmpErr(st.err, fmt.Errorf("measurement %q: %w", m.Name(), errTooLarge))
		return out[:start], nil
	}
	buf = out[:start]
	all := m.Fields()
	half := fields / 2
	buf, a := w.serialize(buf, m.WithFields(all[:half:half]), limit, st, true)
	buf, b := w.serialize(buf, m.WithFields(all[half:]), limit, st, true)
	return buf, append(a, b...)
}

// countSerialized books a prepared job in internal_serializer: the metrics handed over, the
// bytes of their values (keys and headers are not the serializer's), the time taken, and
// the metrics that could not be serialized.
func (w *writer) countSerialized(j *job, took time.Duration) {
	ss := w.k.serStats.Load()
	if ss == nil {
		return
	}
	bytes, failed := 0, 0
	for _, s := range j.spans {
		bytes += s.val[1] - s.val[0]
	}
	for i := range j.metrics {
		if j.metrics[i].reason == morse.ReasonSerialize {
			failed++
		}
	}
	ss.Serialized(len(j.metrics), bytes, took)
	ss.Failed(failed)
}
