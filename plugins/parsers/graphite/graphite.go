// Package graphite reads Graphite's plaintext protocol as Telegraf's "graphite" data format
// does: one "path value [timestamp]" a line, the path read into a measurement, tags and a
// field by Telegraf's templates (plugins/common/graphitetemplate), and Graphite 1.1 tags
// after the path (cpu.load;host=a;dc=x) added to them.
package graphite

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/graphitetemplate"
	"github.com/morse-agent/morse/plugins/parsers"
)

// The range of timestamps Telegraf's graphite parser takes: a 32-bit Unix time's.
var (
	MinDate = time.Date(1901, 12, 13, 0, 0, 0, 0, time.UTC)
	MaxDate = time.Date(2038, 1, 19, 0, 0, 0, 0, time.UTC)
)

// Options are the graphite format's options, with Telegraf's keys.
type Options struct {
	// Separator (separator) joins the parts of a path that make the measurement, or the
	// field, or a tag named twice; "." when empty.
	Separator string `toml:"separator"`
	// Templates (templates) read paths: "[separator] [filter] template [tag=value,...]".
	// A filter is a path whose parts may be "*"; the template whose filter matches most
	// of a path is used, and "measurement*" when none does. Template parts are
	// measurement, measurement*, field, field*, a tag key, or empty to skip a part.
	Templates []string `toml:"templates"`
}

// Validate reports every problem of the options: each bad template.
func (o *Options) Validate() error {
	_, err := o.engine()
	return err
}

func (o *Options) engine() (*graphitetemplate.Engine, error) {
	sep := o.Separator
	if sep == "" {
		sep = graphitetemplate.DefaultSeparator
	}
	def, err := graphitetemplate.NewTemplate(graphitetemplate.DefaultSeparator, "measurement*", nil)
	if err != nil {
		return nil, err
	}
	e, err := graphitetemplate.NewEngine(sep, def, o.Templates)
	if err != nil {
		return nil, morse.Errorf("templates", "%w", err)
	}
	return e, nil
}

// Parser reads the plaintext protocol. Its fields are configuration only, so one Parser
// may be used by many goroutines at once.
type Parser struct {
	engine *graphitetemplate.Engine
	now    func() time.Time
}

// New returns a Parser for o.
func New(o Options, s parsers.Settings) (*Parser, error) {
	e, err := o.engine()
	if err != nil {
		return nil, err
	}
	return &Parser{engine: e, now: s.Clock()}, nil
}

// Parse reads each line of data, surrounding white space trimmed and empty lines skipped,
// and emits one metric per line; a line it refuses is reported in the *parsers.Error with
// its number, and the others are kept.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	var errs parsers.Error
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		m, err := p.ParseLine(string(line))
		if err != nil {
			errs.Add(parsers.EntryError{Line: n, Text: parsers.Excerpt(line), Err: err})
			continue
		}
		emit(m)
	}
	return errs.Err()
}

// ParseLine reads one line, without its line ending.
func (p *Parser) ParseLine(line string) (morse.Metric, error) {
	var words [3]string
	n := fields(line, &words)
	if n != 2 && n != 3 {
		return morse.Metric{}, fmt.Errorf("received %q which doesn't have required fields", line)
	}
	path, graphiteTags, _ := strings.Cut(words[0], ";")
	measurement, tags, field := p.engine.Apply(path)
	if measurement == "" {
		measurement = path
	}
	v, err := strconv.ParseFloat(words[1], 64)
	if err != nil {
		return morse.Metric{}, fmt.Errorf("field %q value: %w", words[0], err)
	}
	t, err := p.timestamp(&words, n)
	if err != nil {
		return morse.Metric{}, err
	}
	tags = addGraphiteTags(tags, graphiteTags)
	if field == "" {
		field = "value"
	}
	return morse.NewMetric(measurement, tags, []morse.Field{{Key: field, Value: morse.Float(v)}}, t), nil
}

// timestamp reads the third word: Unix seconds, with a fraction, or -1 for now.
func (p *Parser) timestamp(words *[3]string, n int) (time.Time, error) {
	if n < 3 {
		return p.now(), nil
	}
	u, err := strconv.ParseFloat(words[2], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("field %q time: %w", words[0], err)
	}
	// -1 is carbon's "now" (graphite-project/carbon#54).
	if u == -1 {
		return p.now(), nil
	}
	t := time.Unix(int64(u), int64((u-math.Floor(u))*float64(time.Second)))
	if t.Before(MinDate) || t.After(MaxDate) {
		return time.Time{}, errors.New("timestamp out of range")
	}
	return t, nil
}

// addGraphiteTags adds the tags after the path, "k=v" separated by ';', over the
// template's. Telegraf skips, and so does morse, a pair without exactly one '=', with an
// empty key or value, a key holding '!' or '^', or a value starting with '~'.
func addGraphiteTags(tags []morse.Tag, s string) []morse.Tag {
	for s != "" {
		var kv string
		kv, s, _ = strings.Cut(s, ";")
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" || strings.Contains(v, "=") ||
			strings.ContainsAny(k, "!^") || strings.HasPrefix(v, "~") {
			continue
		}
		tags = setTag(tags, k, v)
	}
	return tags
}

func setTag(tags []morse.Tag, key, value string) []morse.Tag {
	for i := range tags {
		if tags[i].Key == key {
			tags[i].Value = value
			return tags
		}
	}
	return append(tags, morse.Tag{Key: key, Value: value})
}

// fields splits s at white space, as strings.Fields does, into at most three words and
// returns how many it found (4 meaning more than three).
func fields(s string, words *[3]string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		start := i
		for i < len(s) {
			r, size = rune(s[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			if unicode.IsSpace(r) {
				break
			}
			i += size
		}
		if n == 3 {
			return 4
		}
		words[n] = s[start:i]
		n++
	}
	return n
}
