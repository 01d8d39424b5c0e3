// Package influx writes metrics as InfluxDB line protocol.
//
// The Serializer appends to a caller's buffer and does not allocate, so an output can encode
// a whole batch into one reused buffer. What it writes is read back to the same metric by
// InfluxDB 1.x and 2.x and by morse's own parser (plugins/parsers/influx), with these
// documented exceptions, chosen to match Telegraf so that both agents write the same series:
//
//   - Tags whose key or value is empty are left out, because InfluxDB refuses them.
//   - Trailing backslashes are removed from measurement names, tag keys, tag values and field
//     keys: line protocol cannot represent them, since they would escape the separator.
//   - Tab, newline, form feed and carriage return in a name or key are written as the two
//     characters `\t`, `\n`, `\f`, `\r` and read back as those two characters. Other control
//     bytes, and invalid UTF-8, become U+FFFD.
//   - String field values escape only `"` and `\`; newlines and tabs in them are written raw,
//     which InfluxDB stores exactly.
//   - A float that is NaN or ±Inf cannot be written: the field is left out and counted.
//
// InfluxDB 1.x reads a backslash that is directly followed by a comma, space or equals sign in
// a name or key differently from the line-protocol/v2 parser; such names are rare and are
// written the way v2 reads them.
package influx

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/selfstat"
)

// Errors that make a whole metric unwritable. They reach callers wrapped in a
// *morse.PermanentError with Reason morse.ReasonSerialize, because writing the same metric
// again can never succeed.
var (
	// ErrEmptyName means the measurement name is empty once trailing backslashes are removed.
	ErrEmptyName = errors.New("empty measurement name")
	// ErrCommentName means the measurement name starts with '#', which every line-protocol
	// parser reads as a comment line.
	ErrCommentName = errors.New("measurement name starts with '#', which line protocol reads as a comment")
	// ErrNoFields means that no field of the metric could be written.
	ErrNoFields = errors.New("no field can be written")
	// ErrTimeRange means the timestamp is outside the range that InfluxDB stores,
	// 1677-09-21T00:12:43.145224194Z to 2262-04-11T23:47:16.854775806Z.
	ErrTimeRange = errors.New("time outside range")
)

// The nanosecond range that InfluxDB accepts. It keeps the two lowest int64 values for itself
// and one at the top, so a timestamp outside this range is refused by the server.
const (
	minNanos = math.MinInt64 + 2
	maxNanos = math.MaxInt64 - 1
)

var (
	minTime = time.Unix(0, minNanos)
	maxTime = time.Unix(0, maxNanos)
)

// Options configure a Serializer.
type Options struct {
	// Precision is the unit of the written timestamps: 1ns (the default when zero),
	// 1µs, 1ms or 1s. The Unix time in nanoseconds is divided by it, truncating toward zero,
	// so the reader must be told the same precision (InfluxDB's ?precision= parameter).
	Precision time.Duration
	// UintSupport writes unsigned integers as `123u`. Without it they are written as signed
	// integers (`123i`), and values above math.MaxInt64 are clamped to it, as Telegraf does,
	// because InfluxDB 1.x refuses the `u` suffix by default.
	UintSupport bool
	// DecimalFloats writes floats in plain decimal notation, never with an exponent
	// ("0.00001", not "1e-05"), which is what Telegraf's serializer writes and what
	// `morse --test` prints to match `telegraf --test`.
	DecimalFloats bool
	// MaxLineBytes limits the length of a line, newline included; 0 means no limit. A metric
	// that does not fit is split into several lines with the same series and timestamp, as
	// Telegraf does; a field that does not fit even alone is left out and counted.
	MaxLineBytes int
	// SkippedFields, when set, is incremented for every field that is left out, in addition
	// to the serializer's own count.
	SkippedFields *selfstat.Counter
	// BackslashEscapes writes names, keys and tag values for a reader that takes every
	// backslash as escaping the byte after it, as QuestDB does, where InfluxDB takes one only
	// before a comma, space or equals sign: a backslash is written as two (and a trailing
	// one kept), and a tab, line feed, form feed or carriage return as a backslash and the
	// byte itself. Line metrics are written as they are: their text already follows that
	// rule (morse.NewLineMetric).
	BackslashEscapes bool
}

// Serializer encodes metrics as line protocol. It holds no per-call state, so one Serializer
// may be used by many goroutines at once.
type Serializer struct {
	precision int64
	uint      bool
	floatFmt  byte // 'g', or 'f' with DecimalFloats
	maxLine   int
	counter   *selfstat.Counter
	skipped   atomic.Int64
	keys      *keyTable
}

// New returns a Serializer with the given options.
func New(opts Options) *Serializer {
	p := int64(opts.Precision)
	if p <= 0 {
		p = 1
	}
	s := &Serializer{precision: p, uint: opts.UintSupport, floatFmt: 'g', maxLine: opts.MaxLineBytes,
		counter: opts.SkippedFields, keys: influxKeys}
	if opts.BackslashEscapes {
		s.keys = backslashKeys
	}
	if opts.DecimalFloats {
		s.floatFmt = 'f'
	}
	return s
}

// SkippedFields is the number of fields left out so far: NaN and infinite floats, fields
// whose key is empty, and fields too long for MaxLineBytes.
func (s *Serializer) SkippedFields() int64 { return s.skipped.Load() }

// AppendMetric appends m to dst as one line (or several, under MaxLineBytes), each ending in
// '\n'. It does not allocate unless dst must grow. When m cannot be written at all it returns
// dst unchanged and an error wrapping a *morse.PermanentError with Reason
// morse.ReasonSerialize. Fields that were left out on the way, such as the NaN fields of a
// metric that has no other field, are counted in SkippedFields even then.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	t := m.Time()
	// The footer is the timestamp and the newline. It lives on the stack because every line
	// of a split metric ends with it, and knowing its length up front lets MaxLineBytes be
	// checked before a field is committed.
	var buf [24]byte
	footer := buf[:0]
	if !t.IsZero() {
		if t.Before(minTime) || t.After(maxTime) {
			return dst, s.fail(ErrTimeRange, m)
		}
		footer = append(footer, ' ')
		footer = strconv.AppendInt(footer, t.UnixNano()/s.precision, 10)
	}
	footer = append(footer, '\n')
	if lt, ok := m.Line(); ok {
		// A line metric is already written, but for its time (see morse.NewLineMetric) and
		// its unsigned integers. Only a line too long for MaxLineBytes is taken apart, to be
		// split; rewriting unsigned integers never makes a line longer.
		if s.maxLine == 0 || len(lt.Text)+len(footer) <= s.maxLine {
			if lt.Uints && !s.uint {
				dst = appendSignedLine(dst, lt)
			} else {
				dst = append(dst, lt.Text...)
			}
			return append(dst, footer...), nil
		}
		m = m.Expanded()
	}
	name := s.trim(m.Name())
	switch {
	case name == "":
		return dst, s.fail(ErrEmptyName, m)
	case name[0] == '#':
		return dst, s.fail(ErrCommentName, m)
	}

	start := len(dst)
	dst, _ = appendKey(dst, name, false, s.keys)
	nameEnd := len(dst)
	dst, altered := s.appendTags(dst, m.Tags(), false)
	if altered {
		// A key changed on the way out (a trailing backslash removed, a control byte
		// replaced), so two distinct keys may now read the same, which InfluxDB refuses as
		// "duplicate tags". This rare path writes the tags again, keeping the first of equals.
		dst, _ = s.appendTags(dst[:nameEnd], m.Tags(), true)
	}
	dst, written := s.appendFields(dst, start, len(dst), m.Fields(), footer)
	if written == 0 {
		return dst[:start], s.fail(ErrNoFields, m)
	}
	return append(dst, footer...), nil
}

// appendTags appends the tag set after the measurement, which ends dst. With dedup it leaves
// out a tag whose written key equals one written before. It reports whether any key was
// altered on the way out, which is when written keys can collide.
func (s *Serializer) appendTags(dst []byte, tags []morse.Tag, dedup bool) ([]byte, bool) {
	altered := false
	first := len(dst)
	for _, tag := range tags {
		k, v := s.trim(tag.Key), s.trim(tag.Value)
		if k == "" || v == "" {
			continue
		}
		mark := len(dst)
		dst = append(dst, ',')
		var changed bool
		dst, changed = appendKey(dst, k, true, s.keys)
		altered = altered || changed || len(k) != len(tag.Key)
		if dedup && hasTagKey(dst[first:mark], dst[mark+1:]) {
			dst = dst[:mark]
			continue
		}
		dst = append(dst, '=')
		dst, _ = appendKey(dst, v, true, s.keys)
	}
	return dst, altered
}

// hasTagKey reports whether the written tag set ",k=v,k=v..." holds the written key. Written
// keys are equal exactly when the keys they stand for are, so bytes are compared as they are.
func hasTagKey(set, key []byte) bool {
	for i := 0; i < len(set); {
		ks := i + 1 // set[i] is the comma before a key
		ke := scanUnescaped(set, ks, '=')
		if bytes.Equal(set[ks:ke], key) {
			return true
		}
		i = scanUnescaped(set, ke, ',')
	}
	return false
}

// scanUnescaped returns the index of the first c in b from i on that no backslash escapes,
// reading escapes as parsers do: a backslash escapes a following comma, equals sign or space.
func scanUnescaped(b []byte, i int, c byte) int {
	for ; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) && (b[i+1] == ',' || b[i+1] == '=' || b[i+1] == ' ') {
			i++
			continue
		}
		if b[i] == c {
			return i
		}
	}
	return len(b)
}

// appendFields appends the field set after the header dst[start:headerEnd], starting new
// lines as MaxLineBytes requires. It returns how many fields it wrote; the caller ends the
// last line.
func (s *Serializer) appendFields(dst []byte, start, headerEnd int, fields []morse.Field, footer []byte) ([]byte, int) {
	lineStart, onLine, written := start, 0, 0
	var skipped int64
	for _, f := range fields {
		key := s.trim(f.Key)
		if key == "" || !writable(f.Value) {
			skipped++
			continue
		}
		mark := len(dst)
		if onLine == 0 {
			dst = append(dst, ' ')
		} else {
			dst = append(dst, ',')
		}
		dst = s.appendField(dst, key, f.Value)
		if s.maxLine > 0 && len(dst)-lineStart+len(footer) > s.maxLine {
			fieldLen := len(dst) - mark - 1
			dst = dst[:mark]
			if headerEnd-start+1+fieldLen+len(footer) > s.maxLine {
				// The field does not fit even alone on a line of its own.
				skipped++
				continue
			}
			// onLine > 0 here, or the field would have been alone and too long above.
			// Close this line and repeat the header for the next one.
			dst = append(dst, footer...)
			lineStart = len(dst)
			dst = append(dst, dst[start:headerEnd]...)
			dst = append(dst, ' ')
			dst = s.appendField(dst, key, f.Value)
			onLine = 0
		}
		onLine++
		written++
	}
	if skipped > 0 {
		s.skipped.Add(skipped)
		if s.counter != nil {
			s.counter.Add(skipped)
		}
	}
	return dst, written
}

// writable reports whether line protocol can carry v. NaN and infinities have no
// representation, and the zero Value has no type.
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

// appendField appends key=value for a value that writable accepted.
func (s *Serializer) appendField(dst []byte, key string, v morse.Value) []byte {
	dst, _ = appendKey(dst, key, true, s.keys)
	dst = append(dst, '=')
	switch v.Type() {
	case morse.TypeFloat:
		// The shortest representation that parses back to the same bits. An integral float
		// is written without a decimal point ("1", "1e+21"), which InfluxDB reads as a
		// float, so the type survives.
		if s.floatFmt == 'f' {
			return strconv.AppendFloat(dst, v.Float(), 'f', -1, 64) // as telegraf --test prints
		}
		return appendFloat(dst, v.Float())
	case morse.TypeInt:
		return append(strconv.AppendInt(dst, v.Int(), 10), 'i')
	case morse.TypeUint:
		u := v.Uint()
		if s.uint {
			return append(strconv.AppendUint(dst, u, 10), 'u')
		}
		return append(strconv.AppendInt(dst, int64(min(u, math.MaxInt64)), 10), 'i')
	case morse.TypeString:
		return appendStringValue(dst, v.Str())
	case morse.TypeBool:
		if v.Bool() {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	return dst
}

// fail builds the error for a metric that cannot be written at all. Only this path
// allocates.
func (s *Serializer) fail(reason error, m morse.Metric) error {
	return morse.Permanent(morse.ReasonSerialize, fmt.Errorf("influx: measurement %q: %w", m.Name(), reason))
}

// AppendBatch appends every metric of batch to dst. Metrics that cannot be written are left
// out and counted in dropped; the caller reports them with morse.ReasonSerialize.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) (out []byte, dropped int) {
	for _, m := range batch {
		var err error
		if dst, err = s.AppendMetric(dst, m); err != nil {
			dropped++
		}
	}
	return dst, dropped
}
