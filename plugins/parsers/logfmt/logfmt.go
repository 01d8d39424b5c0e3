// Package logfmt reads Telegraf's "logfmt" data format: each line of key=value pairs is one
// metric, named after the input. It decodes with github.com/go-logfmt/logfmt, the library
// Telegraf uses, so that lines mean what they mean to Telegraf.
//
// A value becomes an integer field when it reads as one, else a float, else a boolean, else
// a string; keys that match logfmt_tag_keys become tags. Empty values and keys without a
// value are left out, and a line left with nothing gives no metric.
//
// One thing differs from Telegraf, which refuses the whole payload at its first malformed
// line: a malformed line (an unterminated quote, a key that starts with a quote) is refused
// alone, with its line and column, and the lines around it are kept.
package logfmt

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	golog "github.com/go-logfmt/logfmt"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/parsers"
)

// Options are Telegraf's options of the logfmt data format.
type Options struct {
	// LogfmtTagKeys (logfmt_tag_keys) lists the keys whose values become tags; globs are
	// accepted ("*", "tags_*"). The other keys become fields.
	LogfmtTagKeys []string `toml:"logfmt_tag_keys"`
}

// Validate reports every problem of the options: a pattern that does not compile.
func (o *Options) Validate() error {
	_, err := glob.Compile("logfmt_tag_keys", o.LogfmtTagKeys)
	return err
}

// Parser reads logfmt. Its fields are configuration only, so one Parser may be used by many
// goroutines at once.
type Parser struct {
	tags *glob.Matcher
	s    parsers.Settings
}

// New builds a Parser; metrics are named s.MetricName.
func New(o Options, s parsers.Settings) (*Parser, error) {
	tags, err := glob.Compile("logfmt_tag_keys", o.LogfmtTagKeys)
	if err != nil {
		return nil, err
	}
	return &Parser{tags: tags, s: s}, nil
}

// Parse reads every line of data and emits a metric for each line that has a key with a
// value. Malformed lines are refused with their line and column; the others are kept.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	var errs parsers.Error
	now := p.s.Clock()()
	base := 0 // lines of data before rest
	for rest := data; len(rest) > 0; {
		err := p.records(rest, now, emit)
		if err == nil {
			break
		}
		var se *golog.SyntaxError
		if !errors.As(err, &se) {
			errs.Add(parsers.EntryError{Line: base + 1, Err: err})
			break
		}
		start, end, next := lineBounds(rest, se.Line)
		errs.Add(parsers.EntryError{Line: base + se.Line, Column: se.Pos, Text: parsers.Excerpt(rest[start:end]),
			Err: errors.New(se.Msg)})
		base += se.Line
		rest = rest[next:]
	}
	return errs.Err()
}

// records decodes data until its end or its first malformed line, whose metric it does not
// emit. The decoder stops at a syntax error, so Parse starts a new one after that line.
func (p *Parser) records(data []byte, now time.Time, emit func(morse.Metric)) error {
	// The decoder's buffer must hold the longest line, or it fails with bufio.ErrTooLong
	// where Telegraf's fails beyond 64 KiB; morse reads any line that is in memory.
	dec := golog.NewDecoderSize(bytes.NewReader(data), longestLine(data)+2)
	// A line's keys and values are copied into text, which becomes one string for the
	// line: one allocation for its text instead of one per key and per value (the
	// decoder's slices are valid only until its next scan). The scratch starts on the
	// stack; a longer line grows it on the heap.
	var textBuf [512]byte
	var pairBuf [16]span
	for dec.ScanRecord() {
		text, pairs := textBuf[:0], pairBuf[:0]
		for dec.ScanKeyval() {
			if len(dec.Value()) == 0 {
				continue
			}
			k := len(text)
			text = append(text, dec.Key()...)
			v := len(text)
			text = append(text, dec.Value()...)
			pairs = append(pairs, span{key: k, val: v, end: len(text)})
		}
		if dec.Err() != nil {
			return dec.Err()
		}
		if len(pairs) > 0 {
			emit(p.metric(string(text), pairs, now))
		}
	}
	return dec.Err()
}

// span is one pair of a line: where its key and value start in the line's text, and where
// the value ends.
type span struct{ key, val, end int }

// metric builds a line's metric: keys that match logfmt_tag_keys are tags, the others
// typed fields.
func (p *Parser) metric(text string, pairs []span, now time.Time) morse.Metric {
	nTags := 0
	for _, sp := range pairs {
		if p.tags.Match(text[sp.key:sp.val]) {
			nTags++
		}
	}
	tags := make([]morse.Tag, 0, nTags)
	fields := make([]morse.Field, 0, len(pairs)-nTags)
	for _, sp := range pairs {
		key, val := text[sp.key:sp.val], text[sp.val:sp.end]
		if nTags > 0 && p.tags.Match(key) {
			tags = append(tags, morse.Tag{Key: key, Value: val})
			continue
		}
		fields = setField(fields, key, fieldValue(val))
	}
	return morse.NewMetric(p.s.MetricName, tags, fields, now)
}

// fieldValue types a value as Telegraf does: an integer, else a float, else a boolean,
// else a string.
func fieldValue(s string) morse.Value {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return morse.Int(n)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return morse.Float(f)
	}
	if v, err := strconv.ParseBool(s); err == nil {
		return morse.Bool(v)
	}
	return morse.String(s)
}

// setField sets key in fields; a key repeated on a line keeps its last value, as in
// Telegraf's map of fields.
func setField(fields []morse.Field, key string, v morse.Value) []morse.Field {
	for i := range fields {
		if fields[i].Key == key {
			fields[i].Value = v
			return fields
		}
	}
	return append(fields, morse.Field{Key: key, Value: v})
}

// longestLine returns the length of the longest line of data.
func longestLine(data []byte) int {
	longest := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return max(longest, len(data))
		}
		longest = max(longest, i)
		data = data[i+1:]
	}
	return longest
}

// lineBounds returns where the 1-based line n of data starts and ends, without its line
// ending and a carriage return before it, and where the line after it starts.
func lineBounds(data []byte, n int) (start, end, next int) {
	for ; n > 1; n-- {
		i := bytes.IndexByte(data[start:], '\n')
		if i < 0 {
			return len(data), len(data), len(data)
		}
		start += i + 1
	}
	end, next = len(data), len(data)
	if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
		end, next = start+i, start+i+1
	}
	if end > start && data[end-1] == '\r' {
		end--
	}
	return start, end, next
}

// Lines are independent, so Parser is no parsers.LineParser: a stream input hands each
// line to Parse.
var _ parsers.Parser = (*Parser)(nil)
