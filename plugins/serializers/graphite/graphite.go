// Package graphite writes metrics in Graphite's plaintext protocol as Telegraf's "graphite"
// data format does: one "path value timestamp" line per field, the path built by a
// template (plugins/common/graphitetemplate) or, with graphite_tag_support, as
// measurement.field;tag=value;... for Graphite 1.1. Paths are sanitized with Telegraf's
// rules; string fields, NaN and infinities are not written, booleans are 1 and 0, and the
// timestamp is in whole seconds.
package graphite

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/graphitetemplate"
	"github.com/morse-agent/morse/plugins/serializers"
)

// Errors that make a whole metric unwritable. They reach callers wrapped in a
// *morse.PermanentError with Reason morse.ReasonSerialize.
var (
	// ErrNoFields means no field of the metric has a value Graphite takes: strings, NaN
	// and infinities are left out, as in Telegraf, which writes nothing for such a metric.
	ErrNoFields = errors.New("no field can be written")
	// ErrNoPath means the template gave the metric no path: it names only tags the metric
	// does not have.
	ErrNoPath = errors.New("the template gives no path")
)

// Options configure a Serializer, with the keys of Telegraf's graphite serializer.
type Options struct {
	// Prefix (prefix) is put before every path, with a dot.
	Prefix string `toml:"prefix"`
	// Template (template) builds paths: its dotted parts are measurement, field, tags (the
	// values of the tags no other part names) or a tag key (that tag's value); default
	// "host.tags.measurement.field".
	Template string `toml:"template"`
	// Templates (templates) are "glob template" pairs, the first whose glob matches the
	// measurement being used, and a lone template that replaces Template.
	Templates []string `toml:"templates"`
	// StrictRegex (graphite_strict_sanitize_regex) matches the characters that the strict
	// sanitizing replaces with '_'; default `[^a-zA-Z0-9-:._=\p{L}]`. Whatever it says,
	// '/', '@' and '*' become '-', '\' is removed and ".." becomes ".".
	StrictRegex string `toml:"graphite_strict_sanitize_regex"`
	// TagSupport (graphite_tag_support) writes Graphite 1.1 tags instead of a template's
	// path: [prefix.]measurement[.field];key=value;... with the tag "name" written as "_name".
	TagSupport bool `toml:"graphite_tag_support"`
	// TagSanitizeMode (graphite_tag_sanitize_mode) is "strict" (default: tags as paths) or
	// "compatible" (Graphite's own rules, which let more characters through).
	TagSanitizeMode string `toml:"graphite_tag_sanitize_mode"`
	// Separator (graphite_separator) joins prefix, measurement and field with tag support;
	// default ".".
	Separator string `toml:"graphite_separator"`
}

// Validate reports every problem of the options, each under its key.
func (o *Options) Validate() error {
	_, err := New(*o)
	return err
}

// Serializer writes metrics as Graphite lines. It holds no per-call state, so one
// Serializer may be used by many goroutines at once.
type Serializer struct {
	namer      *graphitetemplate.Namer
	prefix     string
	tags       bool
	compatible bool
	separator  string
	strict     *regexp.Regexp // nil for the default class, which has a fast path
	skipped    atomic.Int64
}

// New returns a Serializer, or an error naming every option at fault.
func New(o Options) (*Serializer, error) {
	s := &Serializer{prefix: o.Prefix, tags: o.TagSupport, separator: o.Separator}
	var errs []error
	namer, err := graphitetemplate.NewNamer(o.Template, o.Templates, o.Prefix)
	if err != nil {
		errs = append(errs, err)
	}
	s.namer = namer
	switch o.TagSanitizeMode {
	case "", "strict":
	case "compatible":
		s.compatible = true
	default:
		errs = append(errs, morse.Errorf("graphite_tag_sanitize_mode", "must be \"strict\" or \"compatible\", not %q", o.TagSanitizeMode))
	}
	if s.separator == "" {
		s.separator = "."
	}
	if o.StrictRegex != "" && o.StrictRegex != defaultStrict {
		re, err := regexp.Compile(o.StrictRegex)
		if err != nil {
			errs = append(errs, morse.Errorf("graphite_strict_sanitize_regex", "invalid regex provided %q: %w", o.StrictRegex, err))
		}
		s.strict = re
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// SkippedFields is the number of fields left out so far: strings, NaN and infinities.
func (s *Serializer) SkippedFields() int64 { return s.skipped.Load() }

// AppendMetric appends m's lines, one per field, to dst. When no line can be written it
// returns dst unchanged and an error wrapping a *morse.PermanentError.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	m = m.Expanded()
	start := len(dst)
	var tsBuf [24]byte
	ts := strconv.AppendInt(append(tsBuf[:0], ' '), m.Time().UnixNano()/1e9, 10)
	var bucket string
	var tags []string
	if s.tags {
		tags = s.tagPairs(m)
	} else if bucket = s.namer.Bucket(m); bucket == "" {
		return dst, s.fail(ErrNoPath, m)
	}
	written, skipped := 0, int64(0)
	for _, f := range m.Fields() {
		if !writable(f.Value) {
			skipped++
			continue
		}
		if s.tags {
			dst = s.appendTagged(dst, m.Name(), f.Key, tags)
		} else {
			mark := len(dst)
			dst = graphitetemplate.AppendField(dst, bucket, f.Key)
			dst = s.sanitize(dst, mark)
		}
		dst = append(append(serializers.AppendNumeric(append(dst, ' '), f.Value), ts...), '\n')
		written++
	}
	if skipped > 0 {
		s.skipped.Add(skipped)
	}
	if written == 0 {
		return dst[:start], s.fail(ErrNoFields, m)
	}
	return dst, nil
}

// AppendBatch appends the lines of every metric of batch; metrics that cannot be written
// are left out and counted in dropped.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) (out []byte, dropped int) {
	for _, m := range batch {
		var err error
		if dst, err = s.AppendMetric(dst, m); err != nil {
			dropped++
		}
	}
	return dst, dropped
}

func (s *Serializer) fail(reason error, m morse.Metric) error {
	return morse.Permanent(morse.ReasonSerialize, fmt.Errorf("graphite: measurement %q: %w", m.Name(), reason))
}

// appendTagged appends a tag-support path: [prefix sep] measurement [sep field], sanitized,
// then the sanitized tag pairs.
func (s *Serializer) appendTagged(dst []byte, name, field string, tags []string) []byte {
	mark := len(dst)
	if s.prefix != "" {
		dst = append(append(dst, s.prefix...), s.separator...)
	}
	dst = append(dst, name...)
	if field != "value" {
		dst = append(append(dst, s.separator...), field...)
	}
	dst = s.sanitize(dst, mark)
	for _, t := range tags {
		dst = append(append(dst, ';'), t...)
	}
	return dst
}

// tagPairs is m's tags as Graphite 1.1 writes them, key=value sanitized and sorted as
// strings; the tag "name", which Graphite reserves, is written as "_name".
func (s *Serializer) tagPairs(m morse.Metric) []string {
	pairs := make([]string, 0, len(m.Tags()))
	var buf []byte
	for _, t := range m.Tags() {
		k := t.Key
		if k == "name" {
			k = "_name"
		}
		if s.compatible {
			pairs = append(pairs, compatiblePair(k, t.Value))
			continue
		}
		buf = append(append(append(buf[:0], k...), '='), t.Value...)
		buf = s.sanitize(buf, 0)
		pairs = append(pairs, string(buf))
	}
	slices.Sort(pairs)
	return pairs
}

// writable reports whether Graphite takes v: numbers but NaN and infinities, and booleans.
func writable(v morse.Value) bool {
	switch v.Type() {
	case morse.TypeInt, morse.TypeUint, morse.TypeBool:
		return true
	case morse.TypeFloat:
		f := v.Float()
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return false
}
