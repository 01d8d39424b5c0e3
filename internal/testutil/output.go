package testutil

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/morse-agent/morse"
)

// ScriptOutput is an in-process Output whose answers a test scripts. It records what was
// written and when, in the fake time of a synctest bubble when it runs in one. The engine's
// tests (batch, agent) share it, so that they script sinks the same way; the listeners'
// tests wait on it (Wait) for what a listener delivered.
type ScriptOutput struct {
	// Answer, when set, decides the result of each Write; call counts from 0.
	Answer func(call int, batch []morse.Metric) error
	// OnWrite, when set, runs after each Write, outside the lock.
	OnWrite func()

	mu       sync.Mutex
	calls    []time.Time
	written  []morse.Metric
	batches  [][]morse.Metric
	closed   bool
	connects int
	changed  chan struct{} // closed and replaced whenever metrics are written; nil until Wait
}

// Connect counts the connection.
func (o *ScriptOutput) Connect(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.connects++
	return nil
}

// Write records the batch and answers as Answer says.
func (o *ScriptOutput) Write(_ context.Context, batch []morse.Metric) error {
	o.mu.Lock()
	call := len(o.calls)
	o.calls = append(o.calls, time.Now())
	var err error
	if o.Answer != nil {
		err = o.Answer(call, batch)
	}
	cp := append([]morse.Metric(nil), batch...)
	o.batches = append(o.batches, cp)
	if err == nil {
		o.written = append(o.written, cp...)
		if o.changed != nil {
			close(o.changed)
			o.changed = nil
		}
	}
	hook := o.OnWrite
	o.mu.Unlock()
	if hook != nil {
		hook()
	}
	return err
}

// Close records that the output was closed.
func (o *ScriptOutput) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	return nil
}

// Snapshot returns when each Write was called and the metrics written successfully.
func (o *ScriptOutput) Snapshot() (calls []time.Time, written []morse.Metric) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.calls...), append([]morse.Metric(nil), o.written...)
}

// Metrics returns the metrics written successfully so far.
func (o *ScriptOutput) Metrics() []morse.Metric {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.written)
}

// LineMetrics counts the metrics written successfully so far that are held as line-protocol
// text.
func (o *ScriptOutput) LineMetrics() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, m := range o.written {
		if _, ok := m.Line(); ok {
			n++
		}
	}
	return n
}

// Wait blocks until at least n metrics were written successfully, failing the test after
// timeout. It wakes on each write rather than polling.
func (o *ScriptOutput) Wait(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		have := len(o.written)
		if have >= n {
			o.mu.Unlock()
			return
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		ch := o.changed
		o.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waited %s for %d metrics, have %d", timeout, n, have)
		}
	}
}

// BatchSizes returns the size of every batch Write was called with, in order.
func (o *ScriptOutput) BatchSizes() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sizes []int
	for _, b := range o.batches {
		sizes = append(sizes, len(b))
	}
	return sizes
}

// Batches returns every batch Write was called with, in order.
func (o *ScriptOutput) Batches() [][]morse.Metric {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([][]morse.Metric(nil), o.batches...)
}

// Closed reports whether Close was called.
func (o *ScriptOutput) Closed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// LineOutput is a ScriptOutput that takes line metrics as they are (morse.LineWriter), so
// that a listener may hand its lines over as line metrics.
type LineOutput struct{ ScriptOutput }

// WritesLines implements morse.LineWriter.
func (o *LineOutput) WritesLines() bool { return true }

// DiscardOutput accepts every batch and keeps nothing but a count, like a sink that is never
// the bottleneck.
type DiscardOutput struct{ n atomic.Int64 }

// Connect does nothing.
func (d *DiscardOutput) Connect(context.Context) error { return nil }

// Close does nothing.
func (d *DiscardOutput) Close() error { return nil }

// Write counts the batch.
func (d *DiscardOutput) Write(_ context.Context, b []morse.Metric) error {
	d.n.Add(int64(len(b)))
	return nil
}

// Written is how many metrics were written.
func (d *DiscardOutput) Written() int64 { return d.n.Load() }

// SeqMetric is metric number i of a numbered sequence: measurement m, tag seq=i, field v=i
// and time i ns, so that tests can tell which metrics arrived, and in which order.
func SeqMetric(i int) morse.Metric {
	return morse.NewMetric("m", []morse.Tag{{Key: "seq", Value: strconv.Itoa(i)}},
		[]morse.Field{{Key: "v", Value: morse.Int(int64(i))}}, time.Unix(0, int64(i)))
}

// SeqMetrics returns SeqMetric(from) up to, not including, SeqMetric(to).
func SeqMetrics(from, to int) []morse.Metric {
	var out []morse.Metric
	for i := from; i < to; i++ {
		out = append(out, SeqMetric(i))
	}
	return out
}

// Seqs returns the sequence numbers of metrics made by SeqMetric, in order; nil for none.
func Seqs(ms []morse.Metric) []int {
	var out []int
	for _, m := range ms {
		v, _ := m.Field("v")
		out = append(out, int(v.Int()))
	}
	return out
}

// SeqRange returns from up to, not including, to; nil when empty, to compare with Seqs.
func SeqRange(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// QuietLogger discards everything, for code under test that logs.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
