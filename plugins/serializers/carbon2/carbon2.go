// Package carbon2 writes metrics in the Carbon 2.0 text format, as Telegraf's carbon2
// serializer does: one line per numeric or boolean field,
//
//	metric=cpu field=usage_idle cpu=cpu0  91.5 1700000000
//
// with the intrinsic tags (metric, and field unless carbon2_format is
// "metric_includes_field"), the metric's tags, two spaces, the value and the Unix time in
// seconds. String fields are not written; booleans are 1 and 0. Spaces in names, keys and
// values become underscores, an empty tag value is written "null", and the characters that
// Carbon 2.0 reserves are replaced in the measurement name by carbon2_sanitize_replace_char.
//
// morse writes the fields in the metric's order, where Telegraf's order is that of a Go map
// (random); and a metric with no field to write is reported as dropped, where Telegraf
// writes nothing for it without a word.
package carbon2

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// ErrNoFields means the metric has no numeric or boolean field; it reaches callers wrapped
// in a *morse.PermanentError with Reason morse.ReasonSerialize.
var ErrNoFields = errors.New("no numeric or boolean field to write")

// sanitized are the characters replaced in measurement names, Telegraf's set.
const sanitized = "!@#$%^&*()+`'\"[]{};<>,?/\\|="

// Options are Telegraf's carbon2 options.
type Options struct {
	// Format (carbon2_format) is "field_separate" (the default: metric=NAME field=FIELD)
	// or "metric_includes_field" (metric=NAME_FIELD).
	Format string `toml:"carbon2_format"`
	// SanitizeReplaceChar (carbon2_sanitize_replace_char) is the one character that
	// replaces reserved characters in measurement names; ":" when empty.
	SanitizeReplaceChar string `toml:"carbon2_sanitize_replace_char"`
}

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	var errs []error
	switch o.Format {
	case "", "field_separate", "metric_includes_field":
	default:
		errs = append(errs, morse.Errorf("carbon2_format", "%q: must be \"field_separate\" or \"metric_includes_field\"", o.Format))
	}
	if len(o.SanitizeReplaceChar) > 1 {
		errs = append(errs, morse.Errorf("carbon2_sanitize_replace_char", "%q: must be a single character", o.SanitizeReplaceChar))
	}
	return errors.Join(errs...)
}

// Serializer writes Carbon 2.0 lines. It holds no per-call state, so one Serializer may be
// used by many goroutines at once.
type Serializer struct {
	includeField bool
	replace      [256]byte // what each byte of a measurement name becomes
}

// New returns a Serializer, or the options' problems.
func New(o Options) (*Serializer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Serializer{includeField: o.Format == "metric_includes_field"}
	rc := byte(':')
	if o.SanitizeReplaceChar != "" {
		rc = o.SanitizeReplaceChar[0]
	}
	for i := range s.replace {
		c := byte(i)
		if strings.IndexByte(sanitized, c) >= 0 {
			c = rc
		}
		if c == ' ' { // Telegraf replaces spaces after the reserved characters
			c = '_'
		}
		s.replace[i] = c
	}
	return s, nil
}

// AppendMetric appends one line for each numeric or boolean field of m.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	m = m.Expanded()
	start := len(dst)
	var secBuf [20]byte
	sec := strconv.AppendInt(secBuf[:0], m.Time().Unix(), 10)
	for _, f := range m.Fields() {
		if f.Value.Type() == morse.TypeString || f.Value.Type() == morse.TypeInvalid {
			continue
		}
		dst = append(dst, "metric="...)
		for i := 0; i < len(m.Name()); i++ {
			dst = append(dst, s.replace[m.Name()[i]])
		}
		if s.includeField {
			dst = append(dst, '_')
		} else {
			dst = append(dst, " field="...)
		}
		dst = appendUnderscored(dst, f.Key)
		dst = append(dst, ' ')
		for _, t := range m.Tags() {
			dst = appendUnderscored(dst, t.Key)
			dst = append(dst, '=')
			if t.Value == "" {
				dst = append(dst, "null"...)
			} else {
				dst = appendUnderscored(dst, t.Value)
			}
			dst = append(dst, ' ')
		}
		dst = append(dst, ' ')
		dst = serializers.AppendNumeric(dst, f.Value)
		dst = append(dst, ' ')
		dst = append(dst, sec...)
		dst = append(dst, '\n')
	}
	if len(dst) == start {
		return dst, morse.Permanent(morse.ReasonSerialize, fmt.Errorf("carbon2: measurement %q: %w", m.Name(), ErrNoFields))
	}
	return dst, nil
}

// appendUnderscored appends s with its spaces as underscores.
func appendUnderscored(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ' ' {
			dst = append(dst, '_')
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}
