package main

import (
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// testPrinter prints metrics as `telegraf --test` does (Telegraf's agent.Test): each line
// after "> ", in line protocol with the fields sorted by key, unsigned integers with their
// `u` and floats in plain decimal notation, whatever the outputs' settings are. Tags are
// sorted in every metric already.
type testPrinter struct {
	mu     sync.Mutex // aggregators may print from their own goroutine
	w      io.Writer
	ser    *influx.Serializer
	buf    []byte
	fields []morse.Field // scratch for sorting, reused
	err    error         // the first write error; printing stops there
}

func newTestPrinter(w io.Writer) *testPrinter {
	return &testPrinter{w: w, ser: influx.New(influx.Options{UintSupport: true, DecimalFloats: true})}
}

// print writes one metric. A metric that line protocol cannot carry is left out, as
// Telegraf leaves it out.
func (p *testPrinter) print(m morse.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	// A line metric is printed from its parts, so that its fields are sorted and its
	// numbers formatted as above rather than as they arrived.
	m = m.Expanded()
	byKey := func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(m.Fields(), byKey) {
		// The metric's fields are shared and must not be sorted in place.
		p.fields = append(p.fields[:0], m.Fields()...)
		slices.SortStableFunc(p.fields, byKey)
		m = m.WithFields(p.fields)
	}
	line, err := p.ser.AppendMetric(append(p.buf[:0], "> "...), m)
	if err != nil {
		return
	}
	p.buf = line
	_, p.err = p.w.Write(line)
}
