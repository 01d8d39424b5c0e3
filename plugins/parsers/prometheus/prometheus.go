// Package prometheus reads Prometheus' text exposition format (version 0.0.4, what
// exporters serve as text/plain) as Telegraf's "prometheus" data format does, and maps its
// families to metrics in Telegraf's two shapes (see Mapping).
//
// The parser is written for morse rather than built on prometheus/common's expfmt, which
// Telegraf uses: expfmt reads a whole payload into protobuf structures before anything can
// be converted, and fails the payload at its first bad line. This parser converts each
// sample as it reads it (summaries and histograms, whose lines it must gather, at the end),
// keeps the samples around a bad line, and is several times faster (see BenchmarkParse
// and docs/data-formats.md). It accepts what expfmt accepts, with the same messages.
package prometheus

import (
	"bytes"
	"sync"
	"time"
	"unsafe"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// Options are the prometheus format's options, with Telegraf's keys.
type Options struct {
	// IgnoreTimestamp (prometheus_ignore_timestamp) gives every metric the time of the
	// parse, not the timestamp the exposition carries.
	IgnoreTimestamp bool `toml:"prometheus_ignore_timestamp"`
	// MetricVersion (prometheus_metric_version) is the shape of the metrics: 1, one
	// measurement per family; 2, measurement "prometheus" with one field per sample. 0,
	// the default, is 2, as in Telegraf's parser (its prometheus input defaults to 1).
	MetricVersion int `toml:"prometheus_metric_version"`
}

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	if o.MetricVersion < 0 || o.MetricVersion > 2 {
		return morse.Errorf("prometheus_metric_version", "must be 1 or 2, not %d", o.MetricVersion)
	}
	return nil
}

// Parser reads the text exposition format. Its fields are configuration only, so one
// Parser may be used by many goroutines at once.
type Parser struct {
	mapping   Mapping
	now       func() time.Time
	interners sync.Pool // *interner, one per Parse running at once
}

// New returns a Parser for o.
func New(o Options, s parsers.Settings) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	mp := Mapping{MetricVersion: o.MetricVersion, IgnoreTimestamp: o.IgnoreTimestamp}
	if mp.MetricVersion == 0 {
		mp.MetricVersion = 2
	}
	return &Parser{mapping: mp, now: s.Clock()}, nil
}

// Parse reads every line of data and emits the metrics of its samples: those of counters,
// gauges and untyped families as their lines are read, those of summaries and histograms
// at the end, once their lines have been gathered. A line the format refuses is reported
// in the *parsers.Error with its line and column, and the others are kept. The last line
// needs no line feed, and a carriage return before a line feed is ignored.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	r := run{p: p, emit: emit, fams: make(map[string]*Family), sl: &slab{}, in: p.interner()}
	defer p.interners.Put(r.in)
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if col, err := r.line(line); err != nil {
			r.errs.Add(parsers.EntryError{Line: n, Column: col, Text: parsers.Excerpt(line), Err: err})
		}
	}
	for _, g := range r.grouped {
		r.p.mapping.Metrics(g, r.time(), emit)
	}
	return r.errs.Err()
}

// run is the state of one Parse: the families seen so far, by name, since TYPE and HELP
// lines and the lines of a summary or histogram relate to each other only within a payload.
type run struct {
	p       *Parser
	emit    func(morse.Metric)
	fams    map[string]*Family
	grouped []*Family // summaries and histograms, in the order of their first sample
	sl      *slab
	now     time.Time
	errs    parsers.Error
	labels  []morse.Tag // the labels of the line being read
	sorted  []morse.Tag // and in key order
	key     []byte      // the group key of the line being read
	in      *interner
}

// time is the time of samples without a timestamp: the clock read once per payload.
func (r *run) time() time.Time {
	if r.now.IsZero() {
		r.now = r.p.now()
	}
	return r.now
}

// view is b as a string for as long as the parse of one line, for lines whose text no
// metric keeps; strconv and map lookups copy what they keep.
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
