package influx

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/morse-agent/morse"
)

// run is the state of one Parse call or one ParseReader stream.
type run struct {
	// reference sends every entry down the reference path; tests compare the two paths.
	reference bool
	prec      int64
	// now is the time of entries without a timestamp, read from clock (Parser.Now) when
	// the first such entry needs it: senders mostly stamp their lines, and reading the clock
	// for every datagram cost a UDP listener 2% of its time. The run keeps the function, not
	// the Parser, so that a Parser on the caller's stack stays there.
	now     time.Time
	nowSet  bool
	clock   func() time.Time
	sp      splitter
	sc      scratch
	emit    func(morse.Metric)
	onErr   func(LineError) // nil: refused entries go to res
	res     Result          // what Parse returns; a callback to fill it would cost allocations
	lines   int
	metrics int
	fast    int // entries the fast path parsed
	// asLines makes ordinary entries line metrics where they qualify.
	asLines bool
	uints   bool   // the line metric being checked has an unsigned integer field
	arena   []byte // holds the text of line metrics; see keepText
	lit     []byte // an entry rewritten for the decoder; see literalEscapes
	// canWait is set by a stream that has room for more of an unfinished entry: then an
	// ordinary entry that the data ends in the middle of waits for the next read, and
	// takes the fast path (or becomes a line metric) once it is whole, rather than the
	// reference path that the splitter would send it down.
	canWait bool
	partial bool // the fast path stopped at the end of the data: the entry needs more
}

func (p *Parser) newRun(emit func(morse.Metric), onErr func(LineError)) *run {
	r := &run{}
	r.reset(p, emit, onErr)
	return r
}

// reset readies r for a new input, keeping its scratch buffers.
func (r *run) reset(p *Parser, emit func(morse.Metric), onErr func(LineError)) {
	sc, arena := r.sc, r.arena
	*r = run{reference: p.reference, prec: p.precision(), clock: p.Now, sp: newSplitter(), emit: emit, onErr: onErr,
		asLines: p.lines(), arena: arena}
	r.sc = scratch{text: sc.text[:0], tags: sc.tags[:0], fields: sc.fields[:0]}
}

// maxPooledScratch bounds the scratch text that a pooled run keeps: an entry with a huge
// string value should not pin its buffer for good.
const maxPooledScratch = 64 << 10

// runPool holds the runs of Parse. A UDP listener parses each datagram of a few lines on
// its own, and a fresh run would grow its scratch buffers anew for every one.
var runPool = sync.Pool{New: func() any { return new(run) }}

// release returns r to the pool, without the callbacks of its last input.
func (r *run) release() {
	r.emit, r.onErr, r.res, r.clock = nil, nil, Result{}, nil
	if cap(r.sc.text) > maxPooledScratch {
		r.sc = scratch{}
	}
	runPool.Put(r)
}

// parseAvailable parses every complete entry of data from where the splitter stands.
//
// An ordinary entry takes the fast path (fast.go). Any other entry, and every entry of a
// Parser whose reference field is set, takes the reference path: the splitter finds where it
// ends, and a decoder that sees nothing but the entry judges it. The splitter's view of where
// an entry ends is the one that counts, so the decoder, which recovers from a malformed entry
// in its own way (it can end an entry at a lone carriage return), never drifts from it, and
// every entry is judged on its own text.
func (r *run) parseAvailable(data []byte, atEOF bool) {
	for {
		if !r.reference && r.fastNext(data, atEOF) {
			continue
		}
		if r.partial && r.canWait {
			return
		}
		e, ok := r.sp.next(data, atEOF)
		if !ok {
			return
		}
		r.lines++
		text := data[e.start:e.end]
		m, err := r.decodeNext(lineprotocol.NewDecoderWithBytes(r.literalEscapes(text)))
		if err != nil {
			if len(r.sp.letters) > 0 {
				// Judge the text as it came, so that the error's columns are its own. The
				// rewrite changes no entry's validity: a doubled backslash ends no string.
				_, err = r.decodeNext(lineprotocol.NewDecoderWithBytes(text))
			}
			r.fail(text, e, err)
			continue
		}
		r.metrics++
		r.emit(m)
	}
}

// fastNext skips blank lines and, if the next entry is an ordinary one that has fully
// arrived, parses and emits it and moves the splitter past it. It reports whether it did;
// if not, the splitter has not moved, except over blank lines.
func (r *run) fastNext(data []byte, atEOF bool) bool {
	sp := &r.sp
	r.partial = false
	if sp.st != stLine {
		return false
	}
	for sp.pos < len(data) {
		switch data[sp.pos] {
		case ' ':
			sp.pos++
			continue
		case '\n':
			sp.newline()
			continue
		case '#', '\r':
			return false
		}
		m, end, st := r.entry(data, sp.pos, atEOF)
		r.partial = st == fastMore
		if st != fastOK {
			return false
		}
		ended := data[end-1] == '\n'
		sp.finish(end)
		if ended {
			sp.line++
		}
		r.lines++
		r.metrics++
		r.fast++
		r.emit(m)
		return true
	}
	return false
}

// entry parses an ordinary entry on the fast path, or checks it as a line metric when the
// run asks for them and the entry qualifies.
func (r *run) entry(data []byte, pos int, atEOF bool) (morse.Metric, int, fastStatus) {
	if r.asLines {
		m, end, st := r.lineEntry(data, pos, atEOF)
		if st != fastBail {
			return m, end, st
		}
	}
	return r.fastEntry(data, pos, atEOF)
}

// literalEscapes returns text with a second backslash before each `\n`, `\r` and `\t` of
// its string values (the splitter's letters), so that the decoder of line-protocol/v2, which
// reads them as newline, carriage return and tab, reads a backslash and the letter instead.
// That is what InfluxDB 1.x stores for them (models.unescapeStringField unescapes only `\"`
// and `\\`), and what Telegraf's default parser (parser_type "internal") reads; text without
// them is returned as it is.
func (r *run) literalEscapes(text []byte) []byte {
	if len(r.sp.letters) == 0 {
		return text
	}
	out := r.lit[:0]
	from := 0
	for _, off := range r.sp.letters {
		if off < from || off+1 >= len(text) || text[off] != '\\' {
			continue // not where the splitter saw it: leave the text as it is there
		}
		out = append(append(out, text[from:off]...), '\\')
		from = off
	}
	out = append(out, text[from:]...)
	r.lit = out
	return out
}

// decodeNext advances dec to its next entry and decodes it.
func (r *run) decodeNext(dec *lineprotocol.Decoder) (morse.Metric, error) {
	if !dec.Next() {
		return morse.Metric{}, &ParseError{Reason: "missing measurement"}
	}
	return r.decode(dec)
}

// fail reports a refused entry. The decoder that refused it started at the entry, so its
// line numbers count from the entry's first line.
func (r *run) fail(text []byte, e entry, err error) {
	var de *lineprotocol.DecodeError
	if errors.As(err, &de) {
		// The copy counts lines in the whole input, so that its "at line L:C" detail agrees
		// with LineError.Line.
		abs := *de
		abs.Line = de.Line - 1 + int64(e.line)
		at, before := context(text, int(de.Line)-1, de.Column)
		err = &ParseError{Reason: reason(de.Err.Error(), at, before), Err: &abs}
	}
	le := LineError{Line: e.line, Text: quote(text), Err: err}
	if r.onErr == nil {
		r.res.add(le)
		return
	}
	r.onErr(le)
}

// scratch collects the strings of one entry in a single buffer, so that the metric needs one
// string allocation for its name, keys and string values, plus its tag and field slices.
type scratch struct {
	text   []byte
	tags   []tagRef
	fields []fieldRef
}

type span struct{ off, end int }

type tagRef struct{ key, val span }

type fieldRef struct {
	key   span
	val   morse.Value // the value, unless it is a string
	str   span        // the string value, when isStr
	isStr bool
}

func (sc *scratch) add(b []byte) span {
	off := len(sc.text)
	sc.text = append(sc.text, b...)
	return span{off, len(sc.text)}
}

// decode reads the entry that dec stands at.
func (r *run) decode(dec *lineprotocol.Decoder) (morse.Metric, error) {
	sc := &r.sc
	sc.text, sc.tags, sc.fields = sc.text[:0], sc.tags[:0], sc.fields[:0]
	name, err := dec.Measurement()
	if err != nil {
		return morse.Metric{}, err
	}
	nameSpan := sc.add(name)
	for {
		key, val, err := dec.NextTag()
		if err != nil {
			return morse.Metric{}, err
		}
		if key == nil {
			break
		}
		sc.tags = append(sc.tags, tagRef{sc.add(key), sc.add(val)})
	}
	for {
		key, kind, val, err := dec.NextFieldBytes()
		if err != nil {
			return morse.Metric{}, err
		}
		if key == nil {
			break
		}
		f := fieldRef{key: sc.add(key)}
		if kind == lineprotocol.String {
			f.str, f.isStr = sc.add(val), true
		} else if f.val, err = convert(kind, val); err != nil {
			return morse.Metric{}, err
		}
		sc.fields = append(sc.fields, f)
	}
	if len(sc.fields) == 0 {
		return morse.Metric{}, &ParseError{Reason: "missing fields"}
	}
	ts, err := dec.TimeBytes()
	if err != nil {
		return morse.Metric{}, err
	}
	t, err := r.timestamp(ts)
	if err != nil {
		return morse.Metric{}, err
	}
	return sc.build(nameSpan, t)
}

// build makes the metric from the collected spans, with slices of exact capacity.
func (sc *scratch) build(name span, t time.Time) (morse.Metric, error) {
	s := string(sc.text)
	str := func(sp span) string { return s[sp.off:sp.end] }
	var tags []morse.Tag
	if len(sc.tags) > 0 {
		tags = make([]morse.Tag, len(sc.tags))
		for i, tr := range sc.tags {
			tags[i] = morse.Tag{Key: str(tr.key), Value: str(tr.val)}
		}
		cmp := func(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) }
		if !slices.IsSortedFunc(tags, cmp) {
			slices.SortFunc(tags, cmp)
		}
		for i := 1; i < len(tags); i++ {
			if tags[i].Key == tags[i-1].Key {
				// InfluxDB refuses the line rather than guess which value was meant.
				return morse.Metric{}, &ParseError{Reason: "duplicate tags"}
			}
		}
	}
	fields := make([]morse.Field, len(sc.fields))
	for i, fr := range sc.fields {
		v := fr.val
		if fr.isStr {
			v = morse.String(str(fr.str))
		}
		fields[i] = morse.Field{Key: str(fr.key), Value: v}
	}
	return morse.NewMetric(str(name), tags, fields, t), nil
}

// The nanosecond range that InfluxDB stores; the serializer refuses the same times.
const (
	minNanos = -1<<63 + 2
	maxNanos = 1<<63 - 2
)

var errTimeRange = &ParseError{Reason: "time outside range -9223372036854775806 - 9223372036854775806"}

// timestamp converts the timestamp of an entry, or gives the run's time when there is none.
func (r *run) timestamp(b []byte) (time.Time, error) {
	if b == nil {
		if !r.nowSet {
			r.now, r.nowSet = readClock(r.clock, r.prec), true
		}
		return r.now, nil
	}
	n, err := parseInt(b)
	if err != nil {
		if isRange(err) {
			return time.Time{}, errTimeRange
		}
		return time.Time{}, &ParseError{Reason: "bad timestamp"}
	}
	if p := r.prec; p != 1 {
		if n > maxNanos/p || n < minNanos/p {
			return time.Time{}, errTimeRange
		}
		n *= p
	}
	if n < minNanos || n > maxNanos {
		return time.Time{}, errTimeRange
	}
	return time.Unix(0, n).UTC(), nil
}
