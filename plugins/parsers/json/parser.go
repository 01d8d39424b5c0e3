package json

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// The reasons an entry is refused.
var (
	// ErrWrongType refuses a document, or an element of its array, that is not an object.
	ErrWrongType = errors.New("must be an object or an array of objects")
	// ErrNoTimeKey refuses an object without json_time_key.
	ErrNoTimeKey = errors.New("json_time_key not found")
	// ErrNoFields refuses an object left without a field: every value was a string or a
	// boolean that json_string_fields does not list, a tag, or null. Telegraf drops such a
	// metric without a word.
	ErrNoFields = errors.New("no fields (strings and booleans are fields only when json_string_fields lists them)")
	// ErrStrict refuses the other elements of an array that was refused whole, as Telegraf
	// refuses the payload: for an object json_strict refuses, an element that is not an
	// object, or a number beyond a float64.
	ErrStrict = errors.New("refused with the array's bad entry")
)

var utf8BOM = []byte("\xef\xbb\xbf")

// Parser reads data_format "json". It keeps buffers from one Parse to the next, so it is for
// one goroutine at a time.
type Parser struct {
	o      Options
	name   string
	clock  func() time.Time
	loc    *time.Location
	tags   *glob.Matcher
	strs   *glob.Matcher
	strict bool

	// Per parse.
	flat   []entry
	index  map[string]int // key to entry in flat, for objects of dedupAt keys and more
	tagBuf []morse.Tag
	fldBuf []morse.Field
	out    []morse.Metric
	lost   []gjson.Result // the objects of an array that its refusal would lose
}

// New builds a parser of o for an input described by s.
func New(o Options, s parsers.Settings) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Parser{o: o, name: s.MetricName, clock: s.Clock(), strict: o.strict()}
	p.loc, _ = timeformat.LoadLocation(o.JSONTimezone)
	p.tags, _ = glob.Compile("tag_keys", o.TagKeys)
	p.strs, _ = glob.Compile("json_string_fields", o.JSONStringFields)
	return p, nil
}

// run is one Parse: the payload, where the document read lies in it, and the time.
type run struct {
	data []byte
	base int // offset of the document read in data; -1 if json_query's result is not a slice of it
	now  time.Time
	errs parsers.Error
}

// Parse reads one JSON document, an object or an array of objects, as Telegraf does: a
// payload that is not JSON, or whose array holds something other than objects, is refused
// whole, as one entry placed at the problem. An object whose time cannot be read refuses
// the whole array under json_strict and only itself otherwise; an object without fields is
// refused alone.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	r := &run{data: data, now: p.clock().UTC()}
	buf := data
	if p.o.JSONQuery != "" {
		res := gjson.GetBytes(data, p.o.JSONQuery)
		switch {
		case res.Type == gjson.Null:
			return nil // Telegraf: a query that finds nothing, or null, gives no metric
		case !res.IsArray() && !res.IsObject():
			r.refuseAll(0, fmt.Errorf("json_query %q must lead to an object, an array of objects or null, not %v", p.o.JSONQuery, res.Type))
			return r.errs.Err()
		}
		buf, r.base = []byte(res.Raw), -1
		if res.Index > 0 && bytes.HasPrefix(data[res.Index:], buf) {
			r.base = res.Index
		}
	}
	trimmed := bytes.TrimLeftFunc(buf, isSpace)
	r.shift(len(buf) - len(trimmed))
	buf = bytes.TrimRightFunc(trimmed, isSpace)
	if bytes.HasPrefix(buf, utf8BOM) {
		buf = buf[len(utf8BOM):]
		r.shift(len(utf8BOM))
	}
	if len(buf) == 0 {
		return nil
	}
	// gjson's validator is the faster; encoding/json, Telegraf's decoder, places the error
	// and has the last word.
	if !gjson.ValidBytes(buf) {
		var se *stdjson.SyntaxError
		if err := stdjson.Unmarshal(buf, new(stdjson.RawMessage)); err == nil {
			// Valid after all: read on.
		} else if errors.As(err, &se) {
			// Offset counts the bytes read, the bad one included.
			r.refuseAll(int(se.Offset)-1, fmt.Errorf("invalid JSON: %w", err))
		} else {
			r.refuseAll(0, fmt.Errorf("invalid JSON: %w", err))
		}
		if r.errs.Refused > 0 {
			return r.errs.Err()
		}
	}
	// One copy of the document: keys and strings without escapes are slices of it.
	text := string(buf)
	p.out = p.out[:0]
	if p.document(r, text) {
		for _, m := range p.out {
			emit(m)
		}
	}
	clear(p.out)
	return r.errs.Err()
}

// isSpace is what Telegraf trims around a document (bytes.TrimSpace).
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return r > 0xff && (r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 || r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000)
}

// shift moves the document's offset in the payload by n trimmed bytes.
func (r *run) shift(n int) {
	if r.base >= 0 {
		r.base += n
	}
}

// document reads the parsed document into p.out. It reports false when the payload is
// refused whole, and then p.out means nothing.
func (p *Parser) document(r *run, text string) bool {
	root := gjson.Parse(text)
	switch {
	case root.IsObject():
		m, ok, err := p.object(r, root)
		var rangeErr *rangeError
		if errors.As(err, &rangeErr) {
			r.refuseAll(rangeErr.at, err)
			return false
		}
		if err != nil {
			r.refuse(root.Index, root.Raw, err)
			return false
		}
		if ok {
			p.out = append(p.out, m)
		} else {
			r.refuse(root.Index, root.Raw, ErrNoFields)
		}
		return true
	case root.IsArray():
		return p.array(r, root)
	case root.Type == gjson.Null:
		return true // null: no metric
	}
	r.refuseAll(root.Index, ErrWrongType)
	return false
}

// array reads each object of an array. When the array is refused whole, each object read
// before the bad one, and each element after it, is refused too (ErrStrict), after the bad
// one.
func (p *Parser) array(r *run, arr gjson.Result) bool {
	failed := false
	lost := p.lost[:0]
	arr.ForEach(func(_, v gjson.Result) bool {
		if failed {
			lost = append(lost, v)
			return true
		}
		if !v.IsObject() {
			r.refuseAll(v.Index, ErrWrongType)
			failed = true
			return true
		}
		m, has, err := p.object(r, v)
		var rangeErr *rangeError
		switch {
		case errors.As(err, &rangeErr):
			r.refuseAll(rangeErr.at, err)
			failed = true
		case err != nil:
			r.refuse(v.Index, v.Raw, err)
			failed = p.strict
		case !has:
			r.refuse(v.Index, v.Raw, ErrNoFields)
		default:
			p.out = append(p.out, m)
			lost = append(lost, v)
		}
		return true
	})
	if failed {
		for _, v := range lost {
			r.refuse(v.Index, v.Raw, ErrStrict)
		}
	}
	clear(lost)
	p.lost = lost[:0]
	return !failed
}

// refuse records one refused entry at offset at of the document read.
func (r *run) refuse(at int, text string, err error) {
	e := parsers.EntryError{Err: err, Text: parsers.Excerpt(text)}
	if r.base >= 0 {
		e.Line, e.Column = parsers.Position(r.data, r.base+at)
	}
	r.errs.Add(e)
}

// refuseAll records the payload as one refused entry, placed at offset at of the document.
func (r *run) refuseAll(at int, err error) {
	r.refuse(at, "", err)
}

// rangeError is a number beyond float64, which Telegraf's decoder refuses with the payload.
type rangeError struct {
	at  int
	raw string
}

func (e *rangeError) Error() string { return fmt.Sprintf("number %s out of range of a float64", e.raw) }

// valueOf converts a flattened value as Telegraf's parser hands it to its time parser.
func (e *entry) valueOf() any {
	switch e.kind {
	case kindNum:
		return e.num
	case kindStr:
		return e.str
	}
	return e.b
}

// tagValue is the text of a value moved to a tag.
func (e *entry) tagValue() string {
	switch e.kind {
	case kindNum:
		return strconv.FormatFloat(e.num, 'f', -1, 64)
	case kindStr:
		return e.str
	}
	return strconv.FormatBool(e.b)
}

// object turns one object into a metric. ok is false when it has no field left. An error
// means the object cannot be read (its time); a *rangeError refuses the payload.
func (p *Parser) object(r *run, obj gjson.Result) (m morse.Metric, ok bool, err error) {
	p.flat = p.flat[:0]
	clear(p.index)
	if err := p.children("", obj); err != nil {
		return m, false, err
	}
	name := p.name
	if p.o.JSONNameKey != "" {
		if i := p.find(p.o.JSONNameKey); i >= 0 && p.flat[i].kind == kindStr {
			name = p.flat[i].str
		}
	}
	t := r.now
	if p.o.JSONTimeKey != "" {
		i := p.find(p.o.JSONTimeKey)
		if i < 0 {
			return m, false, fmt.Errorf("%w: %q", ErrNoTimeKey, p.o.JSONTimeKey)
		}
		t, err = timeformat.Parse(p.o.JSONTimeFormat, p.flat[i].valueOf(), p.loc)
		if err != nil {
			return m, false, fmt.Errorf("json_time_key %q: %w", p.o.JSONTimeKey, err)
		}
		if t.Year() == 0 {
			t = t.AddDate(r.now.Year(), 0, 0)
		}
		p.flat[i].dropped = true
	}
	tags, fields := p.tagBuf[:0], p.fldBuf[:0]
	for i := range p.flat {
		e := &p.flat[i]
		switch {
		case e.dropped:
		case p.tags.Match(e.key):
			tags = append(tags, morse.Tag{Key: e.key, Value: e.tagValue()})
		case e.kind == kindNum:
			fields = append(fields, morse.Field{Key: e.key, Value: morse.Float(e.num)})
		case !p.strs.Match(e.key):
		case e.kind == kindStr:
			fields = append(fields, morse.Field{Key: e.key, Value: morse.String(e.str)})
		default:
			fields = append(fields, morse.Field{Key: e.key, Value: morse.Bool(e.b)})
		}
	}
	p.tagBuf, p.fldBuf = tags[:0], fields[:0]
	if len(fields) == 0 {
		return m, false, nil
	}
	return morse.NewMetric(name, clone(tags), clone(fields), t), true, nil
}

// clone copies a reused buffer at its exact size; none is nil.
func clone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// find returns the index of the live entry with key k, or -1.
func (p *Parser) find(k string) int {
	for i := range p.flat {
		if p.flat[i].key == k && !p.flat[i].dropped {
			return i
		}
	}
	return -1
}

// errNotValue cannot happen on a validated document; it guards flatten.
var errNotValue = errors.New("unexpected JSON value")
