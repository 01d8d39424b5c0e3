// Package testutil is the one home of the tests' helpers: an Accumulator that records what a
// plugin adds, scripted outputs, golden "shape" lists that say which measurements, tags and
// typed fields an input must emit, golden cases that processors and aggregators run against,
// the one golden-file comparison (Golden, with the -update flag), free ports, the readers
// of /proc (StatusKiB, ProcCPU, ReadUDPPort) and CPUTime, log capture (Logs), test
// certificates (Certs), connection floods, a child process with a file-size limit for full-disk tests
// (FullDiskChild), tmpfs mounts, short directories for unix sockets, a bounded context and
// the build of the agent's binary (BuildMorse). Nothing here is part of the agent: the
// tests and the benchmark harnesses in bench/ use it. What starts a server, the agent
// included, is in internal/testserver.
package testutil

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/morse-agent/morse"
)

// Accumulator records metrics and errors in memory. It is safe for concurrent use, so the
// race detector can check inputs that add from several goroutines. The zero value is ready.
type Accumulator struct {
	// Now gives the time of metrics added by AddFields without a time. Nil means time.Now.
	// Set it before the first use; it is read without the lock.
	Now func() time.Time

	mu      sync.Mutex
	metrics []morse.Metric
	errs    []error
	skipped int
	// changed is closed and replaced whenever something is recorded, so that Wait wakes
	// up exactly when there is news instead of polling on a timer.
	changed chan struct{}
}

var _ morse.Accumulator = (*Accumulator)(nil)

// AddMetric records m.
func (a *Accumulator) AddMetric(m morse.Metric) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.metrics = append(a.metrics, m)
	a.signalLocked()
}

// AddFields records a metric built from maps, the way the engine's accumulator does. Fields
// of unsupported types are left out and counted, see SkippedFields.
func (a *Accumulator) AddFields(name string, fields map[string]any, tags map[string]string, t ...time.Time) {
	var tm time.Time
	switch {
	case len(t) > 0:
		tm = t[0]
	case a.Now != nil:
		tm = a.Now()
	default:
		tm = time.Now()
	}
	m, skipped := morse.NewMetricFromMaps(name, tags, fields, tm)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.skipped += skipped
	a.metrics = append(a.metrics, m)
	a.signalLocked()
}

// AddError records err. A nil error is ignored, as the engine ignores it.
func (a *Accumulator) AddError(err error) {
	if err == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs = append(a.errs, err)
	a.signalLocked()
}

func (a *Accumulator) signalLocked() {
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
}

// Metrics returns a copy of the recorded metrics, in the order they were added.
func (a *Accumulator) Metrics() []morse.Metric {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]morse.Metric(nil), a.metrics...)
}

// MetricsNamed returns the recorded metrics of one measurement, in the order they were added.
func (a *Accumulator) MetricsNamed(name string) []morse.Metric {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []morse.Metric
	for _, m := range a.metrics {
		if m.Name() == name {
			out = append(out, m)
		}
	}
	return out
}

// HasMeasurement reports whether any recorded metric has the given name.
func (a *Accumulator) HasMeasurement(name string) bool {
	return len(a.MetricsNamed(name)) > 0
}

// NMetrics is the number of recorded metrics.
func (a *Accumulator) NMetrics() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.metrics)
}

// Errors returns a copy of the recorded errors.
func (a *Accumulator) Errors() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.errs...)
}

// SkippedFields is the number of fields AddFields left out for having an unsupported type.
func (a *Accumulator) SkippedFields() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.skipped
}

// Clear forgets every recorded metric and error, so one accumulator can serve several
// gathers of a test.
func (a *Accumulator) Clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.metrics, a.errs, a.skipped = nil, nil, 0
}

// Wait blocks until at least n metrics are recorded or ctx ends. Service inputs add metrics
// from their own goroutines; Wait lets their tests synchronise without sleeping.
func (a *Accumulator) Wait(ctx context.Context, n int) error {
	for {
		a.mu.Lock()
		if len(a.metrics) >= n {
			a.mu.Unlock()
			return nil
		}
		if a.changed == nil {
			a.changed = make(chan struct{})
		}
		ch := a.changed
		have := len(a.metrics)
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d metrics, have %d: %w", n, have, ctx.Err())
		}
	}
}
