// Package splunkmetric writes metrics as JSON objects for Splunk's metric store, as
// Telegraf's splunkmetric serializer does. By default each numeric or boolean field is one
// object, its tags beside the metric's name and value and the time in seconds:
//
//	{"_value":91.5,"cpu":"cpu0","metric_name":"cpu.usage_idle","time":1529875740.819}
//
// With splunkmetric_multimetric every field of a metric goes in one object, as
// "metric_name:cpu.usage_idle":91.5. With splunkmetric_hec_routing the object is the HTTP
// Event Collector's, {"time":...,"event":"metric","host":...,"index":...,"source":...,
// "fields":{...}}, with the tags host, index and source as those keys; without it those
// three tags are not written, as in Telegraf. Objects follow each other without a
// separator; a batch is its metrics' objects one after another.
//
// Booleans are written 1 and 0 and string fields are left out. Where Telegraf fails a
// whole metric for one NaN or infinite field, which JSON cannot hold, morse leaves the field
// out and counts it; a metric with no field left is reported as dropped, where Telegraf
// writes nothing for it without a word.
package splunkmetric

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers/json"
)

// ErrNoFields means the metric has no numeric or boolean field that JSON can hold; it
// reaches callers wrapped in a *morse.PermanentError with Reason morse.ReasonSerialize.
var ErrNoFields = errors.New("no numeric or boolean field to write")

// Options are Telegraf's splunkmetric options.
type Options struct {
	// HECRouting (splunkmetric_hec_routing) writes the HTTP Event Collector's object, with
	// host, index, source and time as its keys, for outputs.http to Splunk's collector.
	HECRouting bool `toml:"splunkmetric_hec_routing"`
	// MultiMetric (splunkmetric_multimetric) writes all fields of a metric in one object
	// (Splunk 8.0 and later) instead of one object each.
	MultiMetric bool `toml:"splunkmetric_multimetric"`
	// OmitEventTag (splunkmetric_omit_event_tag) leaves "event":"metric" out of HEC
	// objects.
	OmitEventTag bool `toml:"splunkmetric_omit_event_tag"`
}

// Validate reports the options' problems; every combination is valid.
func (o *Options) Validate() error { return nil }

// Serializer writes Splunk metric objects. It holds no per-call state, so one Serializer
// may be used by many goroutines at once.
type Serializer struct {
	o       Options
	skipped atomic.Int64
}

// New returns a Serializer.
func New(o Options) (*Serializer, error) { return &Serializer{o: o}, nil }

// SkippedFields is the number of NaN and infinite fields left out so far.
func (s *Serializer) SkippedFields() int64 { return s.skipped.Load() }

// kv is one key of an object; keys are written in ascending order, as encoding/json
// writes a map's.
type kv struct {
	key string
	val morse.Value
}

// object collects an object's keys; a later key replaces an earlier one, as a map
// assignment does in Telegraf.
type object []kv

func (o *object) set(key string, v morse.Value) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, kv{key, v})
}

// AppendMetric appends m's object or objects.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	m = m.Expanded()
	var stack [16]kv
	common := object(stack[:0])
	var host, index, source string
	for _, t := range m.Tags() {
		switch t.Key {
		case "host":
			host = t.Value
		case "index":
			index = t.Value
		case "source":
			source = t.Value
		default:
			common = append(common, kv{t.Key, morse.String(t.Value)})
		}
	}
	ts := float64(m.Time().UnixNano()) / 1e9
	head := hecHead{time: ts, host: host, index: index, source: source, event: !s.o.OmitEventTag}
	start := len(dst)
	if s.o.MultiMetric {
		obj := common
		n := 0
		for _, f := range m.Fields() {
			if v, ok := s.value(f.Value); ok {
				obj.set("metric_name:"+m.Name()+"."+f.Key, v)
				n++
			}
		}
		if n > 0 {
			dst = s.appendObject(dst, obj, head)
		}
	} else {
		for _, f := range m.Fields() {
			v, ok := s.value(f.Value)
			if !ok {
				continue
			}
			obj := append(object(nil), common...)
			obj.set("metric_name", morse.String(m.Name()+"."+f.Key))
			obj.set("_value", v)
			dst = s.appendObject(dst, obj, head)
		}
	}
	if len(dst) == start {
		return dst, morse.Permanent(morse.ReasonSerialize, fmt.Errorf("splunkmetric: measurement %q: %w", m.Name(), ErrNoFields))
	}
	return dst, nil
}

// value is the field's value as written, or false for a field that is not.
func (s *Serializer) value(v morse.Value) (morse.Value, bool) {
	switch v.Type() {
	case morse.TypeString, morse.TypeInvalid:
		return v, false
	case morse.TypeBool:
		if v.Bool() {
			return morse.Int(1), true
		}
		return morse.Int(0), true
	case morse.TypeFloat:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			s.skipped.Add(1)
			return v, false
		}
	}
	return v, true
}

// hecHead is what the HEC object holds beside its fields.
type hecHead struct {
	time                float64
	host, index, source string
	event               bool
}

// appendObject writes obj: as the HEC object's fields with hec_routing, or with "time"
// among its keys without.
func (s *Serializer) appendObject(dst []byte, obj object, h hecHead) []byte {
	if !s.o.HECRouting {
		obj.set("time", morse.Float(h.time))
		return appendMap(dst, obj)
	}
	dst = append(dst, `{"time":`...)
	dst = json.AppendNumber(dst, h.time)
	if h.event {
		dst = append(dst, `,"event":"metric"`...)
	}
	for _, p := range [...]kv{{"host", morse.String(h.host)}, {"index", morse.String(h.index)}, {"source", morse.String(h.source)}} {
		if p.val.Str() != "" { // omitempty
			dst = append(dst, ',')
			dst = json.AppendString(dst, p.key)
			dst = append(dst, ':')
			dst = json.AppendString(dst, p.val.Str())
		}
	}
	dst = append(dst, `,"fields":`...)
	dst = appendMap(dst, obj)
	return append(dst, '}')
}

// appendMap writes the keys in ascending order, as encoding/json writes a map.
func appendMap(dst []byte, obj object) []byte {
	slices.SortFunc(obj, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, p := range obj {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = json.AppendString(dst, p.key)
		dst = append(dst, ':')
		switch p.val.Type() {
		case morse.TypeFloat:
			dst = json.AppendNumber(dst, p.val.Float())
		case morse.TypeInt:
			dst = strconv.AppendInt(dst, p.val.Int(), 10)
		case morse.TypeUint:
			dst = strconv.AppendUint(dst, p.val.Uint(), 10)
		default:
			dst = json.AppendString(dst, p.val.Str())
		}
	}
	return append(dst, '}')
}
