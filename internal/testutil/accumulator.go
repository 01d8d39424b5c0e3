// Package testutil holds helpers for tests: an Accumulator that records what a plugin adds,
// and golden "shape" lists that say which measurements, tags and typed fields a plugin must
// emit. Nothing here is used outside tests.
package testutil

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
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

// Marker qualifies one line of a golden shape list.
type Marker int

// The markers a golden line may carry in its trailing comment.
const (
	// Required: the item must be present on every metric of its measurement.
	Required Marker = iota
	// Optional: the item may be missing from some metrics (for example a tag that only
	// per-CPU series carry); when present its type must match.
	Optional
	// AbsentHere: the item is documented upstream but cannot exist in this test's
	// environment (another OS, or data only the agent provides). It must not be emitted,
	// so that a change which starts emitting it forces the golden file to be revisited.
	AbsentHere
)

// ShapeItem is one tag or field of a golden shape. Type is empty for tags.
type ShapeItem struct {
	Key    string
	Type   string
	Marker Marker
}

// Shape is the documented shape of one measurement.
type Shape struct {
	Measurement string
	Marker      Marker
	Tags        []ShapeItem
	Fields      []ShapeItem
}

// Shapes is a parsed golden file: the config it applies and the measurements it expects.
type Shapes struct {
	// Config is the TOML body of the file's config lines, to decode into the plugin.
	Config string
	List   []Shape
}

// LoadShapes reads a golden shape list. The format is line based; '#' starts a comment:
//
//	config <TOML line>                  decoded into the plugin before the gather
//	measurement <name> [# marker ...]
//	tag <key> [# marker ...]
//	field <key> <type> [# marker ...]   type: float, integer, unsigned, string, boolean
//
// A trailing comment that starts with "optional" or "absent-here" sets the marker.
func LoadShapes(path string) (Shapes, error) {
	f, err := os.Open(path)
	if err != nil {
		return Shapes{}, err
	}
	defer f.Close()
	var s Shapes
	var cfg strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "config "); ok {
			cfg.WriteString(rest + "\n")
			continue
		}
		if err := s.parseLine(line); err != nil {
			return Shapes{}, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	s.Config = cfg.String()
	return s, sc.Err()
}

func (s *Shapes) parseLine(line string) error {
	body, comment, _ := strings.Cut(line, "#")
	marker := Required
	switch c := strings.TrimSpace(comment); {
	case strings.HasPrefix(c, "absent-here"):
		marker = AbsentHere
	case strings.HasPrefix(c, "optional"):
		marker = Optional
	}
	words := strings.Fields(body)
	switch {
	case len(words) == 2 && words[0] == "measurement":
		s.List = append(s.List, Shape{Measurement: words[1], Marker: marker})
		return nil
	case len(s.List) == 0:
		return fmt.Errorf("%q comes before any measurement line", line)
	}
	cur := &s.List[len(s.List)-1]
	switch {
	case len(words) == 2 && words[0] == "tag":
		cur.Tags = append(cur.Tags, ShapeItem{Key: words[1], Marker: marker})
	case len(words) == 3 && words[0] == "field":
		cur.Fields = append(cur.Fields, ShapeItem{Key: words[1], Type: words[2], Marker: marker})
	default:
		return fmt.Errorf("cannot read %q: want measurement, tag or field", line)
	}
	return nil
}

// Check compares metrics with the shapes and returns every difference, once each: unknown
// measurements, tags or fields, missing required ones, wrong types, and absent-here items
// that were emitted. No differences means the metrics match the golden list exactly.
func (s Shapes) Check(metrics []morse.Metric) []string {
	var problems []string
	seen := map[string]bool{}
	report := func(format string, args ...any) {
		p := fmt.Sprintf(format, args...)
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	emitted := map[string]bool{}
	for _, m := range metrics {
		emitted[m.Name()] = true
		shape, ok := s.find(m.Name())
		switch {
		case !ok:
			report("measurement %s: emitted but not in the golden list", m.Name())
			continue
		case shape.Marker == AbsentHere:
			report("measurement %s: emitted but marked absent-here", m.Name())
		}
		checkTags(shape, m, report)
		checkFields(shape, m, report)
	}
	for _, shape := range s.List {
		if shape.Marker == Required && !emitted[shape.Measurement] {
			report("measurement %s: not emitted", shape.Measurement)
		}
	}
	return problems
}

func (s Shapes) find(name string) (Shape, bool) {
	for _, shape := range s.List {
		if shape.Measurement == name {
			return shape, true
		}
	}
	return Shape{}, false
}

func checkTags(shape Shape, m morse.Metric, report func(string, ...any)) {
	for _, t := range m.Tags() {
		item, ok := findItem(shape.Tags, t.Key)
		switch {
		case !ok:
			report("%s: tag %s: emitted but not in the golden list", m.Name(), t.Key)
		case item.Marker == AbsentHere:
			report("%s: tag %s: emitted but marked absent-here", m.Name(), t.Key)
		}
	}
	for _, item := range shape.Tags {
		if _, ok := m.Tag(item.Key); !ok && item.Marker == Required {
			report("%s: tag %s: missing", m.Name(), item.Key)
		}
	}
}

func checkFields(shape Shape, m morse.Metric, report func(string, ...any)) {
	for _, f := range m.Fields() {
		item, ok := findItem(shape.Fields, f.Key)
		switch {
		case !ok:
			report("%s: field %s: emitted but not in the golden list", m.Name(), f.Key)
		case item.Marker == AbsentHere:
			report("%s: field %s: emitted but marked absent-here", m.Name(), f.Key)
		case f.Value.Type().String() != item.Type:
			report("%s: field %s: type %s, golden says %s", m.Name(), f.Key, f.Value.Type(), item.Type)
		}
	}
	for _, item := range shape.Fields {
		if _, ok := m.Field(item.Key); !ok && item.Marker == Required {
			report("%s: field %s: missing", m.Name(), item.Key)
		}
	}
}

func findItem(items []ShapeItem, key string) (ShapeItem, bool) {
	for _, it := range items {
		if it.Key == key {
			return it, true
		}
	}
	return ShapeItem{}, false
}
