// Package grok reads Telegraf's data_format "grok": lines of text, such as web servers'
// access logs, matched with grok patterns (named regular expressions that name one
// another, %{IPORHOST:client_ip}) whose captures become a metric's fields, tags, name and
// time.
//
// It takes Telegraf 1.39.3's options, modifiers (%{NUMBER:bytes:int}, :tag, :drop,
// :measurement, :ts-httpd, :ts-"2006-01-02"...) and pattern set: the base set of
// Telegraf's grok library and Telegraf's own (COMMON_LOG_FORMAT, COMBINED_LOG_FORMAT,
// ...), in patterns/. Expressions are Go's regexp, as in Telegraf. Where morse differs:
// a line that matches no pattern, or whose capture does not convert (an int that is not
// one, a time no layout reads), is refused and reported with its line number, where
// Telegraf logs it and drops the line or the capture (docs/data-formats.md).
package grok

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// Parser reads grok lines. It keeps state from one call to the next (the previous
// timestamp, for grok_unique_timestamp; the layout that read the last "ts" capture), so
// it serves one goroutine at a time.
type Parser struct {
	patterns  []*pattern
	multiline bool
	unique    bool
	name      string
	now       func() time.Time
	clock     clock
	uniq      uniquer
	// The tags and fields of a line are gathered here and copied out at their exact
	// size: one allocation each per metric.
	tags   []morse.Tag
	fields []morse.Field
}

// The reasons a line is refused.
var (
	ErrNoMatch  = errors.New("matches no grok pattern")
	ErrNoFields = errors.New("captured no field")
)

// New compiles o's patterns once for every line to come.
func New(o Options, s parsers.Settings) (*Parser, error) {
	patterns, loc, err := o.build()
	if err != nil {
		return nil, err
	}
	return &Parser{
		patterns:  patterns,
		multiline: o.GrokMultiline,
		unique:    o.GrokUniqueTimestamp != "disable",
		name:      s.MetricName,
		now:       s.Clock(),
		clock:     clock{loc: loc},
	}, nil
}

// Parse reads each line of data (or, with grok_multiline, all of data as one entry) and
// emits a metric for each line that a pattern matches. Empty lines are skipped; a line
// that matches no pattern, or whose captures do not convert, is refused and reported in
// the returned *parsers.Error by its line number.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	var errs *parsers.Error
	if p.multiline {
		if len(data) > 0 {
			p.entry(data, 1, emit, &errs)
		}
		return errs.Err()
	}
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > 0 {
			p.entry(line, n, emit, &errs)
		}
	}
	return errs.Err()
}

// ParseLine reads one line, as Parse reads a payload: tail hands it each line, or each
// group of lines that its multiline option joined.
func (p *Parser) ParseLine(line []byte, emit func(morse.Metric)) error {
	return p.Parse(line, emit)
}

// entry reads one line, numbered n, and records it in *errs if it is refused.
func (p *Parser) entry(line []byte, n int, emit func(morse.Metric), errs **parsers.Error) {
	err := ErrNoMatch
	for _, pat := range p.patterns {
		if !pat.named {
			continue
		}
		loc := pat.atStart.FindSubmatchIndex(line)
		if loc == nil {
			loc = pat.re.FindSubmatchIndex(line)
		}
		if loc != nil {
			err = p.metric(pat, string(line), loc, emit)
			break
		}
	}
	if err == nil {
		return
	}
	if *errs == nil {
		*errs = &parsers.Error{}
	}
	(*errs).Add(parsers.EntryError{Line: n, Text: parsers.Excerpt(line), Err: err})
}

// metric makes the metric of line s, which pat matched at loc.
func (p *Parser) metric(pat *pattern, s string, loc []int, emit func(morse.Metric)) error {
	name := p.name
	var ts time.Time
	hasTime := false
	tags, fields := p.tags[:0], p.fields[:0]
	for _, c := range pat.captures {
		start, end := loc[2*c.group], loc[2*c.group+1]
		if start == end { // also -1, -1: the group took no part in the match
			continue
		}
		v := s[start:end]
		switch c.mod.kind {
		case kindString:
			fields = append(fields, morse.Field{Key: c.name, Value: morse.String(v)})
		case kindTag:
			tags = append(tags, morse.Tag{Key: c.name, Value: v})
		case kindMeasurement:
			name = v
		case kindInt, kindFloat, kindDuration:
			value, err := convert(c.mod.kind, v)
			if err != nil {
				return fmt.Errorf("capture %s: %w", c.name, err)
			}
			fields = append(fields, morse.Field{Key: c.name, Value: value})
		default:
			t, err := p.clock.read(c.mod, v, p.now)
			if err != nil {
				return fmt.Errorf("capture %s: %w", c.name, err)
			}
			ts, hasTime = t, true
		}
	}
	p.tags, p.fields = tags, fields
	if len(fields) == 0 {
		return ErrNoFields
	}
	if !hasTime {
		ts = p.now()
	}
	if p.unique {
		ts = p.uniq.next(ts)
	}
	sortTags(tags)
	emit(morse.NewMetric(name, slices.Clone(tags), slices.Clone(fields), ts))
	return nil
}

// sortTags sorts a line's few tags by key in place, as NewMetric wants them, which it would
// otherwise do with a general sort that allocates.
func sortTags(tags []morse.Tag) {
	for i := 1; i < len(tags); i++ {
		for j := i; j > 0 && tags[j].Key < tags[j-1].Key; j-- {
			tags[j], tags[j-1] = tags[j-1], tags[j]
		}
	}
}

// convert reads a number capture as Telegraf does.
func convert(k kind, v string) (morse.Value, error) {
	switch k {
	case kindInt:
		n, err := strconv.ParseInt(v, 0, 64)
		return morse.Int(n), err
	case kindFloat:
		f, err := strconv.ParseFloat(v, 64)
		return morse.Float(f), err
	default:
		d, err := time.ParseDuration(v)
		return morse.Int(int64(d)), err
	}
}
