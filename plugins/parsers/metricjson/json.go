// Package metricjson reads metrics in the JSON shape that Telegraf's JSON serializer and morse's
// (plugins/serializers/json) write. It is not data_format "json", which is Telegraf's
// flattening parser (plugins/parsers/json); morse uses it where it reads back what its own
// serializer wrote:
//
//	{"fields":{"used":73.5,"free":2147483648},"name":"disk","tags":{"host":"a"},"timestamp":1700000000}
//
// The input may hold several such objects one after another (one per line, as a file of
// them is written), Telegraf's batch form {"metrics":[...]}, or an array of objects. Keys
// may come in any order; other keys are ignored.
//
// JSON has one number type, so the parser decides a field's type by how the number is
// written: with a decimal point or an exponent it is a float; without, it is a signed
// integer when it fits an int64, an unsigned one when it fits a uint64, and a float beyond.
// morse's serializer writes every float with a decimal point or an exponent, so its floats
// and integers keep their types; Telegraf writes an integral float as "1", which reads back
// as an integer. Strings and booleans keep their types; a null field is left out; an object
// or array in a field (Telegraf's nested fields) becomes a string field holding its JSON.
package metricjson

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/morse-agent/morse"
	serializer "github.com/morse-agent/morse/plugins/serializers/json"
)

// Parser reads the JSON shape. Its fields are configuration only, so one Parser may be used
// by many goroutines at once.
type Parser struct {
	// TimestampUnits (json_timestamp_units) is the unit of numeric timestamps, rounded down
	// to a power of ten; zero means 1s, the serializer's default.
	TimestampUnits time.Duration
	// TimestampFormat (json_timestamp_format) is the Go layout of string timestamps; empty
	// means RFC 3339 with optional fractional seconds.
	TimestampFormat string
	// Now gives the time of objects without a timestamp; nil means time.Now.
	Now func() time.Time
}

// The reasons a JSON value is not a metric.
var (
	ErrNoName    = errors.New("no measurement name")
	ErrNoFields  = errors.New("no fields")
	ErrNotObject = errors.New("not a JSON object")
)

// Parse reads every metric in data and calls emit for each. An object that is valid JSON but
// not a metric (no name, no fields, a tag that is not a string) is skipped and counted; text
// that is not JSON stops the parse there. It returns how many metrics it emitted and, when
// anything was skipped or stopped, an error that says what first and how many.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) (int, error) {
	r := run{p: p, sc: scanner{text: string(data)}, emit: emit, units: serializer.RoundUnits(p.TimestampUnits)}
	for !r.sc.done() {
		if err := r.document(); err != nil {
			r.bad(err)
			break
		}
	}
	return r.metrics, r.err()
}

// run is the state of one Parse.
type run struct {
	p       *Parser
	sc      scanner
	emit    func(morse.Metric)
	units   int64
	now     time.Time
	metrics int
	skipped int
	first   error
	syntax  *SyntaxError
	// Tags and fields are gathered here and copied out at their exact size, so that a
	// metric costs one allocation for each, however many it has.
	tagBuf   []morse.Tag
	fieldBuf []morse.Field
}

func (r *run) bad(err error) {
	r.skipped++
	if r.first == nil {
		r.first = err
	}
	if se, ok := err.(*SyntaxError); ok {
		r.syntax = se
	}
}

func (r *run) err() error {
	if r.skipped == 0 {
		return nil
	}
	return &Error{First: r.first, Skipped: r.skipped, Syntax: r.syntax}
}

// Error reports what Parse skipped. errors.As finds the SyntaxError through it when the
// input stopped being JSON.
type Error struct {
	First   error        // the first problem
	Skipped int          // values that were not metrics, the one cut short by Syntax included
	Syntax  *SyntaxError // where the input stopped being JSON, nil if it did not
}

func (e *Error) Error() string {
	msg := e.First.Error()
	if e.Skipped > 1 {
		msg += fmt.Sprintf(" (and %d more objects could not be read)", e.Skipped-1)
	}
	if e.Syntax != nil && !errors.Is(e.First, e.Syntax) {
		msg += "; " + e.Syntax.Error()
	}
	return msg
}

// Unwrap returns the first problem and the syntax error.
func (e *Error) Unwrap() []error {
	if e.Syntax == nil {
		return []error{e.First}
	}
	return []error{e.First, e.Syntax}
}

// document reads one top-level value: a metric, a batch, or an array of metrics. It returns
// only syntax errors; any other value is counted and skipped.
func (r *run) document() error {
	if r.sc.peek() == '[' {
		return r.sc.elements(r.item)
	}
	return r.item()
}

// item reads a value that should be a metric or a batch.
func (r *run) item() error {
	if r.sc.peek() == '{' {
		return r.metric()
	}
	if _, err := r.sc.skip(); err != nil {
		return err
	}
	r.bad(ErrNotObject)
	return nil
}

// object is one metric while it is read.
type object struct {
	name    string
	hasName bool
	tags    []morse.Tag
	fields  []morse.Field
	time    time.Time
	hasTime bool
	batch   bool // it held "metrics": a batch, already emitted
}

// metric reads an object: a metric, or a batch with a "metrics" array. A metric that is
// valid JSON but not a metric is counted and skipped; a syntax error is returned.
func (r *run) metric() error {
	var o object
	var semantic error
	err := r.sc.members(func(key string) error {
		var err error
		err = r.container(key)
		switch {
		case err != nil: // the value was read and skipped
		case key == "name":
			o.name, err = r.stringValue(key)
			o.hasName = true
		case key == "tags":
			o.tags, err = r.tags()
		case key == "fields":
			o.fields, err = r.fields()
		case key == "timestamp":
			o.time, err = r.timestamp()
			o.hasTime = true
		case key == "metrics":
			o.batch = true
			return r.sc.elements(r.item)
		default:
			_, err = r.sc.skip()
		}
		if err != nil && !isSyntax(err) {
			// Read on to the end of the object, so that the next one parses.
			semantic = cmp.Or(semantic, err)
			return nil
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case o.batch:
		return nil
	case semantic != nil:
		r.bad(semantic)
	case !o.hasName || o.name == "":
		r.bad(ErrNoName)
	case len(o.fields) == 0:
		r.bad(fmt.Errorf("measurement %q: %w", o.name, ErrNoFields))
	default:
		if !o.hasTime {
			o.time = r.clock()
		}
		r.emit(morse.NewMetric(o.name, o.tags, o.fields, o.time))
		r.metrics++
	}
	return nil
}

// isSyntax reports whether err is the scanner's: those are returned as they are, never
// wrapped, so a type assertion finds them without errors.As, which would cost the caller an
// allocation per field.
func isSyntax(err error) bool {
	_, ok := err.(*SyntaxError)
	return ok
}

// container checks that the value of tags, fields or metrics is an object or an array as it
// must be, and otherwise reads it and returns why it is not.
func (r *run) container(key string) error {
	want, kind := byte('{'), "an object"
	switch key {
	case "metrics":
		want, kind = '[', "an array"
	case "tags", "fields":
	default:
		return nil
	}
	if r.sc.peek() == want {
		return nil
	}
	_, err := r.sc.skip()
	return cmp.Or(err, fmt.Errorf("json: %q is not %s", key, kind))
}

// cloneOrNil copies what was gathered in a reused buffer at its exact size; nothing is nil,
// as a metric built in code without tags has them.
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (r *run) clock() time.Time {
	if r.now.IsZero() {
		now := time.Now
		if r.p.Now != nil {
			now = r.p.Now
		}
		r.now = now()
	}
	return r.now
}

func (r *run) stringValue(key string) (string, error) {
	if r.sc.peek() != '"' {
		_, err := r.sc.skip()
		return "", cmp.Or(err, fmt.Errorf("json: %q is not a string", key))
	}
	return r.sc.str()
}

func (r *run) tags() ([]morse.Tag, error) {
	tags := r.tagBuf[:0]
	defer func() { r.tagBuf = tags[:0] }()
	var semantic error
	err := r.sc.members(func(key string) error {
		if r.sc.peek() != '"' {
			_, err := r.sc.skip()
			semantic = cmp.Or(semantic, fmt.Errorf("json: tag %q is not a string", key))
			return err
		}
		v, err := r.sc.str()
		tags = append(tags, morse.Tag{Key: key, Value: v})
		return err
	})
	return cloneOrNil(tags), cmp.Or(err, semantic)
}

func (r *run) fields() ([]morse.Field, error) {
	fields := r.fieldBuf[:0]
	defer func() { r.fieldBuf = fields[:0] }()
	var semantic error
	err := r.sc.members(func(key string) error {
		v, ok, err := r.value()
		if ok {
			fields = append(fields, morse.Field{Key: key, Value: v})
		}
		if err != nil && !isSyntax(err) {
			// The value was read whole; carry on to the end of the object.
			semantic = cmp.Or(semantic, err)
			return nil
		}
		return err
	})
	return cloneOrNil(fields), cmp.Or(err, semantic)
}

// value reads a field value; ok is false for null, which leaves the field out.
func (r *run) value() (v morse.Value, ok bool, err error) {
	sc := &r.sc
	switch c := sc.peek(); {
	case c == '"':
		s, err := sc.str()
		return morse.String(s), err == nil, err
	case c == '-' || c-'0' <= 9:
		text, integer, err := sc.number()
		if err != nil {
			return v, false, err
		}
		v, err = number(text, integer)
		return v, err == nil, err
	case c == '{' || c == '[':
		text, err := sc.skip()
		return morse.String(compact(text)), err == nil, err
	}
	lit, err := sc.literal()
	switch lit {
	case "true":
		return morse.Bool(true), true, nil
	case "false":
		return morse.Bool(false), true, nil
	}
	return v, false, err
}

// number types a JSON number by how it is written; see the package documentation. A number
// beyond the range of a float64 is refused: it would be read as an infinity, which no
// time-series database stores.
func number(text string, integer bool) (morse.Value, error) {
	if integer {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return morse.Int(n), nil
		}
		if n, err := strconv.ParseUint(text, 10, 64); err == nil {
			return morse.Uint(n), nil
		}
	}
	// The scanner checked the syntax, so only the range can fail.
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return morse.Value{}, fmt.Errorf("json: number %s out of range", text)
	}
	return morse.Float(f), nil
}

// timestamp reads a Unix timestamp in the configured units, or a string in the configured
// layout.
func (r *run) timestamp() (time.Time, error) {
	sc := &r.sc
	switch c := sc.peek(); {
	case c == '"':
		s, err := sc.str()
		if err != nil {
			return time.Time{}, err
		}
		layout := cmpOrString(r.p.TimestampFormat, time.RFC3339Nano)
		t, err := time.Parse(layout, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("json: timestamp: %w", err)
		}
		return t, nil
	case c == '-' || c-'0' <= 9:
		text, integer, err := sc.number()
		if err != nil {
			return time.Time{}, err
		}
		return fromUnits(text, integer, r.units)
	}
	_, err := sc.skip()
	return time.Time{}, cmp.Or(err, errors.New("json: timestamp is neither a number nor a string"))
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fromUnits turns a count of units since the Unix epoch into a time, without overflowing
// for counts that are far from 1970 in coarse units.
func fromUnits(text string, integer bool, units int64) (time.Time, error) {
	const second = int64(time.Second)
	if integer {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			if units >= second {
				return time.Unix(n*(units/second), 0).UTC(), nil
			}
			per := second / units
			return time.Unix(n/per, n%per*units).UTC(), nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	ns := f * float64(units)
	if err != nil || math.IsInf(ns, 0) || math.Abs(ns) > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("json: timestamp %s out of range", text)
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}
