package prometheus

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// part is which line of a summary or histogram a sample line is, from its name's suffix.
type part uint8

const (
	partValue part = iota // the family's own name, or name_bucket
	partCount             // name_count
	partSum               // name_sum
)

// line reads one line and returns, when it refuses it, the 1-based column where it found
// the fault and why.
func (r *run) line(b []byte) (int, error) {
	i := 0
	for i < len(b) && blank(b[i]) {
		i++
	}
	switch {
	case i == len(b):
		return 0, nil
	case b[i] == '#':
		return r.comment(b, i+1)
	}
	return r.sample(b, i)
}

// comment reads a HELP or TYPE line; other comments are ignored.
func (r *run) comment(b []byte, i int) (int, error) {
	c := cursor{s: view(b), i: i}
	c.blanks()
	kw := c.token()
	if c.end() || kw != "HELP" && kw != "TYPE" {
		return 0, nil
	}
	c.blanks()
	at := c.col()
	name, err := c.name(true)
	switch {
	case err != nil:
		return at, err
	case c.end():
		return 0, nil
	case !blank(c.s[c.i]):
		return c.col(), errors.New("invalid metric name in comment")
	}
	f, _, err := r.family(name)
	if err != nil {
		return at, err
	}
	c.blanks()
	if c.end() {
		return 0, nil
	}
	at, rest := c.col(), c.s[c.i:]
	if kw == "HELP" {
		if f.help {
			return at, fmt.Errorf("second HELP line for metric name %q", f.Name)
		}
		if err := checkEscapes(rest); err != nil {
			return at, err
		}
		f.help = true
		return 0, nil
	}
	if f.typed {
		return at, fmt.Errorf("second TYPE line for metric name %q, or TYPE reported after samples", f.Name)
	}
	t, ok := parseType(rest)
	if !ok {
		return at, fmt.Errorf("unknown metric type %q", rest)
	}
	f.Type, f.typed = t, true
	return 0, nil
}

// sampleLine is what one sample line says, before it is added to its family.
type sampleLine struct {
	f     *Family
	part  part
	bound float64 // le or quantile, NaN when absent
	value float64
	ts    int64
	hasTS bool
	vcol  int // the value's column
}

// sample reads a sample line and, when it is valid, converts or gathers it.
func (r *run) sample(b []byte, i int) (int, error) {
	// The line is only looked at: the label names and values the metrics keep are
	// interned (label), the family's name cloned (family).
	c := cursor{s: view(b), i: i}
	sl, col, err := r.readSample(&c)
	if err != nil {
		return col, err
	}
	if sl.f.Type != Summary && sl.f.Type != Histogram {
		sl.f.typed = true
		smp := Sample{Labels: r.labels, Value: sl.value}
		if sl.hasTS {
			smp.TimestampMs = sl.ts
		}
		r.p.mapping.sample(sl.f, &smp, r.time(), r.emit)
		return 0, nil
	}
	return r.gather(&sl)
}

// readSample reads the name, labels, value and timestamp of a sample line.
func (r *run) readSample(c *cursor) (sampleLine, int, error) {
	sl := sampleLine{bound: math.NaN()}
	at := c.col()
	braces := c.s[c.i] == '{'
	var name string
	if braces {
		// The name may be the first item within the braces, quoted: {"name",a="b"}.
		c.i++
		c.blanks()
		n, err := c.name(false)
		if err != nil {
			return sl, at, err
		}
		c.blanks()
		if n == "" || c.end() || c.s[c.i] != ',' && c.s[c.i] != '}' {
			return sl, at, errors.New("invalid metric name")
		}
		name = n
	} else {
		n, err := c.name(true)
		if err != nil {
			return sl, at, err
		}
		if n == "" {
			return sl, at, errors.New("invalid metric name")
		}
		name = n
		c.blanks()
	}
	f, p, err := r.family(name)
	if err != nil {
		return sl, at, err
	}
	sl.f, sl.part = f, p
	r.labels = r.labels[:0]
	if braces || !c.end() && c.s[c.i] == '{' {
		if !braces || c.s[c.i] == ',' {
			c.i++
		}
		if col, err := r.readLabels(c, &sl); err != nil {
			return sl, col, err
		}
	}
	c.blanks()
	sl.vcol = c.col()
	at, tok := sl.vcol, c.token()
	if sl.value, err = parseFloat(tok); err != nil {
		return sl, at, fmt.Errorf("expected float as value, got %q", tok)
	}
	if c.end() {
		return sl, 0, nil
	}
	c.blanks()
	at, tok = c.col(), c.token()
	if sl.ts, err = strconv.ParseInt(tok, 10, 64); err != nil {
		return sl, at, fmt.Errorf("expected integer as timestamp, got %q", tok)
	}
	if !c.end() {
		return sl, c.col(), fmt.Errorf("spurious string after timestamp: %q", c.s[c.i:])
	}
	sl.hasTS = true
	return sl, 0, nil
}

// readLabels reads the labels after '{' (or after the name within braces) up to and
// including '}': into r.labels, but for a summary's quantile and a histogram's le, which
// go into sl.bound.
func (r *run) readLabels(c *cursor, sl *sampleLine) (int, error) {
	f := sl.f
	for {
		c.blanks()
		if !c.end() && c.s[c.i] == '}' {
			c.i++
			return 0, nil
		}
		at := c.col()
		key, err := c.name(false)
		if err != nil {
			return at, err
		}
		if key == "" {
			return at, fmt.Errorf("invalid label name for metric %q", f.Name)
		}
		c.blanks()
		if ch := c.peek(); ch != '=' {
			return c.col(), fmt.Errorf("expected '=' after label name, found %q", ch)
		}
		c.i++
		if key == "__name__" {
			return at, fmt.Errorf("label name %q is reserved", key)
		}
		if !validName(key, false) {
			return at, fmt.Errorf("invalid label name %q", key)
		}
		c.blanks()
		if ch := c.peek(); ch != '"' {
			return c.col(), fmt.Errorf("expected '\"' at start of label value, found %q", ch)
		}
		vat := c.col()
		value, err := c.quoted("label value")
		if err != nil {
			return vat, err
		}
		if !utf8.ValidString(value) {
			return vat, fmt.Errorf("invalid label value %q", value)
		}
		if col, err := r.label(sl, key, value, at, vat); err != nil {
			return col, err
		}
		c.blanks()
		switch c.peek() {
		case ',':
			c.i++
		case '}':
			c.i++
			return 0, nil
		default:
			return c.col(), fmt.Errorf("unexpected end of label value %q", value)
		}
	}
}

// label adds one label of the line, or takes it as the line's bound.
func (r *run) label(sl *sampleLine, key, value string, at, vat int) (int, error) {
	f := sl.f
	switch {
	case f.Type == Summary && key == "quantile":
		q, err := parseFloat(value)
		if err != nil {
			return vat, fmt.Errorf("expected float as value for 'quantile' label, got %q", value)
		}
		sl.bound = q
	case f.Type == Histogram && key == "le":
		le, err := parseFloat(value)
		if err != nil {
			return vat, fmt.Errorf("expected float as value for 'le' label, got %q", value)
		}
		sl.bound = le
	default:
		for _, l := range r.labels {
			if l.Key == key {
				return at, fmt.Errorf("duplicate label names for metric %q", f.Name)
			}
		}
		r.labels = append(r.labels, morse.Tag{Key: r.in.intern(key), Value: r.in.intern(value)})
	}
	return 0, nil
}

// gather adds a summary's or histogram's line to the sample of its label set, which is
// converted once the payload is read. The lines of one label set name it identically,
// but for le or quantile; the sample keeps the first line's labels and the last line's
// timestamp, as the text decoder Telegraf uses does.
func (r *run) gather(sl *sampleLine) (int, error) {
	f, v := sl.f, sl.value
	if f.Type == Histogram && (sl.part == partCount || sl.part == partValue && !math.IsNaN(sl.bound)) && v < 0 {
		what := "count"
		if sl.part == partValue {
			what = "bucket population"
		}
		return sl.vcol, fmt.Errorf("negative %s for histogram %q", what, f.Name)
	}
	key := r.groupKey()
	idx, ok := f.groups[view(key)]
	if !ok {
		if f.groups == nil {
			f.groups = make(map[string]int)
			r.grouped = append(r.grouped, f)
		}
		idx = len(f.Samples)
		f.Samples = append(f.Samples, Sample{Labels: slices.Clone(r.labels)})
		f.groups[string(key)] = idx
	}
	s := &f.Samples[idx]
	if sl.hasTS {
		s.TimestampMs = sl.ts
	}
	switch {
	case sl.part == partCount && f.Type == Summary:
		// The decoder keeps a summary's count as an unsigned integer.
		s.Count = float64(uint64(v))
	case sl.part == partCount:
		s.Count = v + 0 // +0 for -0, as an unsigned integer would hold it
	case sl.part == partSum:
		s.Sum = v
	case math.IsNaN(sl.bound):
		// A line of the family with no le or quantile adds nothing to its sample.
	case f.Type == Summary:
		s.Quantiles = append(s.Quantiles, Quantile{Quantile: sl.bound, Value: v})
	default:
		s.Buckets = append(s.Buckets, Bucket{UpperBound: sl.bound, Count: v + 0})
	}
	return 0, nil
}

// groupKey is the line's label set in name order, which identifies its sample.
func (r *run) groupKey() []byte {
	if !slices.IsSortedFunc(r.labels, byKey) {
		r.sorted = append(r.sorted[:0], r.labels...)
		slices.SortFunc(r.sorted, byKey)
	} else {
		r.sorted = r.labels
	}
	k := r.key[:0]
	for _, l := range r.sorted {
		k = append(append(append(append(k, l.Key...), 0xff), l.Value...), 0xff)
	}
	r.key = k
	return k
}

func byKey(a, b morse.Tag) int { return strings.Compare(a.Key, b.Key) }

// family returns the family a name belongs to: its own, or that of the summary or
// histogram whose _count, _sum or _bucket line it is, creating it when new.
func (r *run) family(name string) (*Family, part, error) {
	if f := r.fams[name]; f != nil {
		return f, partValue, nil
	}
	if !validName(name, true) {
		return nil, 0, fmt.Errorf("invalid metric name %q", name)
	}
	if base, p, ok := cutPart(name, false); ok {
		if f := r.fams[base]; f != nil && f.Type == Summary {
			return f, p, nil
		}
	}
	if base, p, ok := cutPart(name, true); ok {
		if f := r.fams[base]; f != nil && f.Type == Histogram {
			return f, p, nil
		}
	}
	f := &Family{Name: strings.Clone(name), slab: r.sl}
	r.fams[f.Name] = f
	return f, partValue, nil
}

// cutPart splits name_count and name_sum, and name_bucket when bucket is set.
func cutPart(name string, bucket bool) (string, part, bool) {
	if len(name) > 6 && strings.HasSuffix(name, "_count") {
		return name[:len(name)-6], partCount, true
	}
	if len(name) > 4 && strings.HasSuffix(name, "_sum") {
		return name[:len(name)-4], partSum, true
	}
	if bucket && len(name) > 7 && strings.HasSuffix(name, "_bucket") {
		return name[:len(name)-7], partValue, true
	}
	return name, partValue, false
}

// parseType reads a TYPE line's type, in any case, as the text decoder does.
func parseType(s string) (Type, bool) {
	for _, t := range []struct {
		name string
		t    Type
	}{{"counter", Counter}, {"gauge", Gauge}, {"untyped", Untyped}, {"summary", Summary},
		{"histogram", Histogram}, {"gauge_histogram", Histogram}, {"gaugehistogram", Histogram}} {
		if strings.EqualFold(s, t.name) {
			return t.t, true
		}
	}
	return 0, false
}

// parseFloat reads a value as the format allows: Go's syntax without hexadecimal or
// underscores, with Inf, +Inf, -Inf and NaN.
func parseFloat(s string) (float64, error) {
	if strings.ContainsAny(s, "pP_") {
		return 0, errors.New("unsupported character in float")
	}
	return strconv.ParseFloat(s, 64)
}

// checkEscapes checks the escapes of a HELP text: \\, \n and \" only.
func checkEscapes(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if i == len(s) {
			return errors.New("invalid escape sequence at end of line")
		}
		if c := s[i]; c != '\\' && c != 'n' && c != '"' {
			return fmt.Errorf("invalid escape sequence '\\%c'", c)
		}
	}
	return nil
}

// validName reports whether s is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, when
// metric is false, label name ([a-zA-Z_][a-zA-Z0-9_]*), as the decoder Telegraf uses
// requires them.
func validName(s string, metric bool) bool {
	if s == "" || !nameStart(s[0], metric) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !nameChar(s[i], metric) {
			return false
		}
	}
	return true
}

func nameStart(c byte, metric bool) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || metric && c == ':'
}

func nameChar(c byte, metric bool) bool { return nameStart(c, metric) || '0' <= c && c <= '9' }

func blank(c byte) bool { return c == ' ' || c == '\t' }
