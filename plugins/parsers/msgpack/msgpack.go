// Package msgpack reads metrics in the MessagePack shape that Telegraf's MessagePack
// serializer and morse's (plugins/serializers/msgpack) write: maps one after another, each
// {"name": str, "time": timestamp, "tags": {str: str}, "fields": {str: value}}, keys in any
// order, other keys ignored. It decodes with github.com/vmihailenco/msgpack/v5.
//
// A field's type follows its encoding: float 32 and 64 are floats; the fixints and int 8 to
// 64 are signed integers; uint 8 to 64 are unsigned integers; str and bin are strings; true
// and false are booleans; nil leaves the field out. morse's serializer writes unsigned
// integers only as uint encodings, so every type survives; Telegraf writes one up to 127 as
// a positive fixint, which reads back as a signed integer. A field holding an array, a map
// or an extension is left out and counted. The time may also be the legacy [sec, nsec]
// array or an RFC 3339 string, as the decoder reads them.
package msgpack

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/morse-agent/morse"
)

// Parser reads the MessagePack shape. It has no configuration beyond Now, so one Parser may
// be used by many goroutines at once.
type Parser struct {
	// Now gives the time of maps without a "time" key; nil means time.Now.
	Now func() time.Time
}

// The reasons a map is not a metric.
var (
	ErrNoName   = errors.New("no measurement name")
	ErrNoFields = errors.New("no fields")
)

// Error reports what Parse skipped.
type Error struct {
	First   error // the first problem
	Skipped int   // maps or fields that were left out
}

func (e *Error) Error() string {
	if e.Skipped > 1 {
		return fmt.Sprintf("msgpack: %v (and %d more problems)", e.First, e.Skipped-1)
	}
	return "msgpack: " + e.First.Error()
}

// Unwrap returns the first problem.
func (e *Error) Unwrap() error { return e.First }

// state is what one Parse needs; it is pooled so that a parse does not allocate its decoder.
type state struct {
	r        bytes.Reader
	dec      *msgpack.Decoder
	tags     []morse.Tag
	fields   []morse.Field
	skipped  int
	first    error
	now      time.Time
	nowValid bool
}

var statePool = sync.Pool{New: func() any {
	st := &state{}
	st.dec = msgpack.NewDecoder(&st.r)
	return st
}}

// Parse reads every metric in data and calls emit for each. A map that is not a metric is
// skipped and counted; data that is not MessagePack stops the parse there. It returns how
// many metrics it emitted and, when anything was skipped, an *Error.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) (int, error) {
	st := statePool.Get().(*state)
	defer func() {
		// After an error the decoder may hold a buffer grown for a length the input only
		// claimed; it keeps and grows that buffer from call to call, so it is dropped
		// instead of pooled.
		if st.skipped == 0 {
			st.tags, st.fields, st.nowValid = st.tags[:0], st.fields[:0], false
			statePool.Put(st)
		}
	}()
	st.r.Reset(data)
	st.dec.Reset(&st.r)
	n := 0
	for st.r.Len() > 0 {
		m, err := st.metric(p)
		if err != nil {
			st.bad(err)
			if !errors.Is(err, errNotMetric) {
				break // the input is not MessagePack from here on
			}
			continue
		}
		emit(m)
		n++
	}
	if st.skipped == 0 {
		return n, nil
	}
	return n, &Error{First: st.first, Skipped: st.skipped}
}

// errNotMetric marks problems after which the next map can still be read.
var errNotMetric = errors.New("not a metric")

func (st *state) bad(err error) {
	st.skipped++
	if st.first == nil {
		st.first = err
	}
}

// metric reads one map. A problem with the shape (a key or tag that is not a string, no
// name, no fields) is returned wrapping errNotMetric once the whole map is read, so that the
// next map can be; a decoding error is returned at once.
func (st *state) metric(p *Parser) (morse.Metric, error) {
	n, err := st.dec.DecodeMapLen()
	if err != nil {
		return morse.Metric{}, fmt.Errorf("metric map: %w", err)
	}
	var o struct {
		name             string
		tags             []morse.Tag
		fields           []morse.Field
		t                time.Time
		hasName, hasTime bool
		shape            error
	}
	for range n {
		key, ok, err := st.str()
		if err == nil && !ok {
			o.shape = cmp.Or(o.shape, errors.New("a key is not a string"))
			if err = st.dec.Skip(); err == nil { // the key, then its value below
				key = "\x00not a string"
			}
		}
		if err != nil {
			return morse.Metric{}, fmt.Errorf("key: %w", err)
		}
		switch key {
		case "name":
			o.name, o.hasName, err = st.str()
		case "time":
			o.t, err = st.dec.DecodeTime()
			o.hasTime = true
		case "tags":
			o.tags, err = st.readTags(&o.shape)
		case "fields":
			o.fields, err = st.readFields()
		default:
			err = st.dec.Skip()
		}
		if err != nil {
			return morse.Metric{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	switch {
	case o.shape != nil:
		return morse.Metric{}, fmt.Errorf("%w: %w", errNotMetric, o.shape)
	case !o.hasName || o.name == "":
		return morse.Metric{}, fmt.Errorf("%w: %w", errNotMetric, ErrNoName)
	case len(o.fields) == 0:
		return morse.Metric{}, fmt.Errorf("%w: measurement %q: %w", errNotMetric, o.name, ErrNoFields)
	case !o.hasTime:
		o.t = st.clock(p)
	}
	return morse.NewMetric(o.name, o.tags, o.fields, o.t), nil
}

// str reads a string (or bin); ok is false, with nothing read, for any other value.
func (st *state) str() (s string, ok bool, err error) {
	c, err := st.dec.PeekCode()
	if err != nil || !msgpcode.IsString(c) && !msgpcode.IsBin(c) {
		return "", false, err
	}
	s, err = st.dec.DecodeString()
	return s, err == nil, err
}

// cloneOrNil copies what was gathered in a reused buffer at its exact size; nothing is nil,
// as a metric built in code without tags has them.
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func (st *state) clock(p *Parser) time.Time {
	if !st.nowValid {
		now := time.Now
		if p.Now != nil {
			now = p.Now
		}
		st.now, st.nowValid = now(), true
	}
	return st.now
}

// readTags reads the tags map. A key or value that is not a string is skipped and noted in
// shape.
func (st *state) readTags(shape *error) ([]morse.Tag, error) {
	n, err := st.dec.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	st.tags = st.tags[:0]
	for range n {
		var kv [2]string
		for i := range kv {
			s, ok, err := st.str()
			if err == nil && !ok {
				*shape = cmp.Or(*shape, errors.New("a tag is not a string"))
				err = st.dec.Skip()
			}
			if err != nil {
				return nil, err
			}
			kv[i] = s
		}
		st.tags = append(st.tags, morse.Tag{Key: kv[0], Value: kv[1]})
	}
	return cloneOrNil(st.tags), nil
}

func (st *state) readFields() ([]morse.Field, error) {
	n, err := st.dec.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	st.fields = st.fields[:0]
	for range n {
		k, err := st.dec.DecodeString() // a key that is no string fails here, and stops
		if err != nil {
			return nil, err
		}
		v, ok, err := st.value()
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		if ok {
			st.fields = append(st.fields, morse.Field{Key: k, Value: v})
		}
	}
	return cloneOrNil(st.fields), nil
}

// value reads a field value by its encoding; see the package documentation. ok is false
// for a value that is left out.
func (st *state) value() (v morse.Value, ok bool, err error) {
	d := st.dec
	c, err := d.PeekCode()
	if err != nil {
		return v, false, err
	}
	switch {
	case c == msgpcode.Float || c == msgpcode.Double:
		f, err := d.DecodeFloat64()
		return morse.Float(f), err == nil, err
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Int8 && c <= msgpcode.Int64:
		n, err := d.DecodeInt64()
		return morse.Int(n), err == nil, err
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint64:
		n, err := d.DecodeUint64()
		return morse.Uint(n), err == nil, err
	case msgpcode.IsString(c) || msgpcode.IsBin(c):
		s, err := d.DecodeString()
		return morse.String(s), err == nil, err
	case c == msgpcode.True || c == msgpcode.False:
		b, err := d.DecodeBool()
		return morse.Bool(b), err == nil, err
	case c == msgpcode.Nil:
		return v, false, d.Skip()
	}
	if err := d.Skip(); err != nil {
		return v, false, err
	}
	st.bad(fmt.Errorf("%w: a field holds code 0x%02x, which is not a number, string or boolean", errNotMetric, c))
	return v, false, nil
}
