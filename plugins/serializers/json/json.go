// Package json writes metrics as JSON in Telegraf's shape, one object per metric:
//
//	{"fields":{"free":2147483648,"used":73.5},"name":"disk","tags":{"host":"a"},"timestamp":1700000000}
//
// Keys are sorted, as Telegraf's encoding/json output sorts them, so that both agents write
// the same bytes for the same metric, with one deliberate difference that keeps types: a
// float with an integral value is written with a decimal point ("1.0", where Telegraf
// writes "1"). JSON has a single number type, and morse's parser (plugins/parsers/json)
// reads a number with a decimal point or an exponent as a float and one without as an
// integer: signed when it fits an int64, unsigned above that. So floats and signed integers
// survive a round trip, and so do unsigned integers above math.MaxInt64; an unsigned integer
// that fits an int64 comes back signed, as InfluxDB without uint support would store it.
//
// The Serializer appends to a caller's buffer and does not allocate, except for the
// nested-fields option, which re-encodes JSON found in string fields.
package json

import (
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// Errors that make a whole metric unwritable. They reach callers wrapped in a
// *morse.PermanentError with Reason morse.ReasonSerialize.
var (
	// ErrNoFields means that no field of the metric could be written: JSON has no NaN or
	// infinity, and those fields are left out.
	ErrNoFields = errors.New("no field can be written")
	// ErrTimeRange means the timestamp does not fit an int64 in the configured units.
	ErrTimeRange = errors.New("time outside the range of the timestamp units")
)

// Options are Telegraf's json serializer options, with its TOML keys.
type Options struct {
	// TimestampUnits (json_timestamp_units) is the unit of the Unix timestamp, rounded down
	// to a power of ten as Telegraf does; zero means 1s, Telegraf's default. A round trip
	// keeps nanoseconds only with 1ns.
	TimestampUnits morse.Duration `toml:"json_timestamp_units"`
	// TimestampFormat (json_timestamp_format), when set, writes the time as a string in this
	// Go layout, in UTC, instead of a number.
	TimestampFormat string `toml:"json_timestamp_format"`
	// Transformation (json_transformation) is a JSONata expression applied to each object
	// (or, in batch format, to {"metrics":[...]}) before it is written; see transform.go.
	Transformation string `toml:"json_transformation"`
	// NestedFieldsInclude and NestedFieldsExclude (json_nested_fields_include and _exclude)
	// select string fields, by key, whose value is written as the JSON it holds instead of
	// as a string, when it is valid JSON. Patterns are path.Match globs (*, ?, [a-z]).
	NestedFieldsInclude []string `toml:"json_nested_fields_include"`
	NestedFieldsExclude []string `toml:"json_nested_fields_exclude"`
}

// Validate reports every problem of the options, each under its key.
func (o *Options) Validate() error {
	var errs []error
	for key, pats := range map[string][]string{"json_nested_fields_include": o.NestedFieldsInclude, "json_nested_fields_exclude": o.NestedFieldsExclude} {
		for _, p := range pats {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, morse.Errorf(key, "bad pattern %q: %w", p, err))
			}
		}
	}
	if o.TimestampUnits < 0 {
		errs = append(errs, morse.Errorf("json_timestamp_units", "must not be negative"))
	}
	if o.Transformation != "" {
		if _, err := compileTransformation(o.Transformation); err != nil {
			errs = append(errs, morse.Errorf("json_transformation", "%w", err))
		}
	}
	return errors.Join(errs...)
}

// Serializer encodes metrics as JSON. It holds no per-call state, so one Serializer may be
// used by many goroutines at once.
type Serializer struct {
	units     int64 // nanoseconds, a power of ten
	layout    string
	include   []string
	exclude   []string
	transform *transformation // nil without json_transformation
	skipped   atomic.Int64
}

// New returns a Serializer, or the options' problems.
func New(opts Options) (*Serializer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Serializer{units: RoundUnits(time.Duration(opts.TimestampUnits)), layout: opts.TimestampFormat,
		include: opts.NestedFieldsInclude, exclude: opts.NestedFieldsExclude}
	if opts.Transformation != "" {
		s.transform, _ = compileTransformation(opts.Transformation)
	}
	return s, nil
}

// RoundUnits is json_timestamp_units as Telegraf reads it: d rounded down to a power of ten
// nanoseconds, a second when zero or less. The parser shares it.
func RoundUnits(d time.Duration) int64 {
	if d <= 0 {
		return int64(time.Second)
	}
	p := int64(1)
	for p <= int64(d)/10 {
		p *= 10
	}
	return p
}

// Units is the timestamp unit in use, after rounding.
func (s *Serializer) Units() time.Duration { return time.Duration(s.units) }

// SkippedFields is the number of fields left out so far: NaN and infinite floats, and
// values of no type.
func (s *Serializer) SkippedFields() int64 { return s.skipped.Load() }

// AppendMetric appends m to dst as one JSON object and a newline. When m cannot be written
// it returns dst unchanged and an error wrapping a *morse.PermanentError.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	if s.transform != nil {
		return s.transformMetric(dst, m)
	}
	start := len(dst)
	dst, n := s.appendObject(dst, m)
	if n == 0 {
		return dst[:start], s.fail(ErrNoFields, m)
	}
	dst, ok := s.appendTime(append(dst, `,"timestamp":`...), m.Time())
	if !ok {
		return dst[:start], s.fail(ErrTimeRange, m)
	}
	return append(dst, '}', '\n'), nil
}

// AppendBatch appends Telegraf's batch form, {"metrics":[...]} and a newline. Metrics that
// cannot be written are left out and named in a *serializers.Error.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) ([]byte, error) {
	if s.transform != nil {
		return s.transformBatch(dst, batch)
	}
	var failed *serializers.Error // allocated only on a failure
	dst = append(dst, `{"metrics":[`...)
	first := true
	for i, m := range batch {
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		var n int
		dst, n = s.appendObject(dst, m)
		ok := n > 0
		if ok {
			dst, ok = s.appendTime(append(dst, `,"timestamp":`...), m.Time())
		}
		if !ok {
			dst = dst[:mark]
			reason := ErrNoFields
			if n > 0 {
				reason = ErrTimeRange
			}
			failed = failed.With(i, s.fail(reason, m))
			continue
		}
		dst = append(dst, '}')
		first = false
	}
	return append(dst, ']', '}', '\n'), failed.Err()
}

var _ serializers.BatchSerializer = (*Serializer)(nil)

// appendObject appends the object up to the timestamp, its keys in Telegraf's order
// (fields, name, tags, timestamp), and returns how many fields it wrote.
func (s *Serializer) appendObject(dst []byte, m morse.Metric) ([]byte, int) {
	m = m.Expanded()
	dst = append(dst, `{"fields":{`...)
	dst, n := s.appendFields(dst, m.Fields())
	dst = append(dst, `},"name":`...)
	dst = appendString(dst, m.Name())
	dst = append(dst, `,"tags":{`...)
	for i, t := range m.Tags() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, t.Key)
		dst = append(dst, ':')
		dst = appendString(dst, t.Value)
	}
	return append(dst, '}'), n
}

// maxStackFields is how many fields are put in key order without allocating.
const maxStackFields = 64

// appendFields writes the fields in ascending key order, as a Go map marshals.
func (s *Serializer) appendFields(dst []byte, fields []morse.Field) ([]byte, int) {
	var stack [maxStackFields]uint16
	order := stack[:0]
	if len(fields) > maxStackFields {
		order = make([]uint16, 0, len(fields))
	}
	for i := range fields {
		order = append(order, uint16(i))
	}
	// Metrics usually arrive with sorted fields, and an insertion sort of a sorted slice
	// is one pass; slices.SortStableFunc would do as well but boxes nothing either way.
	if !slices.IsSortedFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) }) {
		slices.SortStableFunc(order, func(a, b uint16) int { return strings.Compare(fields[a].Key, fields[b].Key) })
	}
	n := 0
	var skipped int64
	for _, i := range order {
		f := fields[i]
		if !writable(f.Value) {
			skipped++
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, f.Key)
		dst = append(dst, ':')
		dst = s.appendValue(dst, f.Key, f.Value)
		n++
	}
	if skipped > 0 {
		s.skipped.Add(skipped)
	}
	return dst, n
}

func writable(v morse.Value) bool {
	switch v.Type() {
	case morse.TypeFloat:
		f := v.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	case morse.TypeInvalid:
		return false
	}
	return true
}

func (s *Serializer) appendValue(dst []byte, key string, v morse.Value) []byte {
	switch v.Type() {
	case morse.TypeFloat:
		return AppendFloat(dst, v.Float())
	case morse.TypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case morse.TypeUint:
		return strconv.AppendUint(dst, v.Uint(), 10)
	case morse.TypeBool:
		return strconv.AppendBool(dst, v.Bool())
	}
	if s.nested(key) {
		if out, ok := appendNested(dst, v.Str()); ok {
			return out
		}
	}
	return appendString(dst, v.Str())
}

// AppendFloat writes f as encoding/json does (AppendNumber), plus ".0" when that form has
// neither a point nor an exponent, so that the reader can tell the float from an integer.
func AppendFloat(dst []byte, f float64) []byte {
	start := len(dst)
	dst = AppendNumber(dst, f)
	for _, c := range dst[start:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

// AppendNumber writes the finite float f exactly as encoding/json's Marshal does: the
// shortest form, with an exponent only below 1e-6 and from 1e21 on, and an integral value
// without a decimal point.
func AppendNumber(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes 1e-07's two-digit exponent as one: "1e-7".
		if n := len(dst); n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// AppendString writes s as a JSON string exactly as encoding/json's Marshal does (HTML
// characters escaped), for the formats built on JSON.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// appendTime writes the timestamp: a number in the configured units, or a string in the
// configured layout. It reports false when the number would not fit an int64.
func (s *Serializer) appendTime(dst []byte, t time.Time) ([]byte, bool) {
	if s.layout != "" {
		var buf [64]byte
		return appendString(dst, string(t.UTC().AppendFormat(buf[:0], s.layout))), true
	}
	n, ok := UnixIn(t, s.units)
	if !ok {
		return dst, false
	}
	return strconv.AppendInt(dst, n, 10), true
}

// UnixIn returns t as a count of units (nanoseconds, a power of ten) since the Unix epoch.
// Within the range of UnixNano it divides that, truncating toward zero as Telegraf does;
// beyond it, it works from whole seconds. It reports false when the count overflows.
func UnixIn(t time.Time, units int64) (int64, bool) {
	if ns := t.UnixNano(); t.Equal(time.Unix(0, ns)) {
		return ns / units, true
	}
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	if units >= int64(time.Second) {
		return sec / (units / int64(time.Second)), true
	}
	per := int64(time.Second) / units
	if sec > math.MaxInt64/per || sec < math.MinInt64/per {
		return 0, false
	}
	return sec*per + nsec/units, true
}

func (s *Serializer) fail(reason error, m morse.Metric) error {
	return morse.Permanent(morse.ReasonSerialize, fmt.Errorf("json: measurement %q: %w", m.Name(), reason))
}

// nested reports whether the string field key is to be written as the JSON it holds.
func (s *Serializer) nested(key string) bool {
	if len(s.include) == 0 && len(s.exclude) == 0 {
		return false
	}
	match := func(pats []string) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, key); ok {
				return true
			}
		}
		return false
	}
	return (len(s.include) == 0 || match(s.include)) && !match(s.exclude)
}
