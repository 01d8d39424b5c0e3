package json_v2

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/internal/timeformat"
)

// ErrNoName refuses the metrics of a table whose measurement_name_path found an empty name.
var ErrNoName = errors.New("measurement_name_path gives an empty name")

// ErrNoFields refuses a metric that has tags but no field, which Telegraf drops silently.
var ErrNoFields = errors.New("no fields")

// Parser reads data_format "json_v2". It keeps state during a Parse, so it is for one
// goroutine at a time.
type Parser struct {
	configs []Config
	locs    []*time.Location // of each table's timestamp_timezone
	clock   func() time.Time
}

// New builds a parser of o for an input described by s.
func New(o Options, s parsers.Settings) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Parser{clock: s.Clock()}
	for _, c := range o.JSONV2 {
		if c.MeasurementName == "" {
			c.MeasurementName = s.MetricName
		}
		loc, _ := timeformat.LoadLocation(c.TimestampTimezone)
		p.configs = append(p.configs, c)
		p.locs = append(p.locs, loc)
	}
	return p, nil
}

var utf8BOM = []byte("\xef\xbb\xbf")

// Parse reads one JSON document. A document that is not JSON, or where a path that is not
// optional finds nothing, or a value cannot be converted to its type, is refused whole, as
// Telegraf refuses it: one entry, placed at the syntax error where there is one.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	var errs parsers.Error
	doc := bytes.TrimPrefix(data, utf8BOM)
	skip := len(data) - len(doc)
	if !gjson.ValidBytes(doc) {
		e := parsers.EntryError{Err: errors.New("invalid JSON")}
		var se *stdjson.SyntaxError
		if err := stdjson.Unmarshal(doc, new(stdjson.RawMessage)); errors.As(err, &se) {
			e.Err = fmt.Errorf("invalid JSON: %w", err)
			e.Line, e.Column = parsers.Position(data, skip+int(se.Offset)-1)
		} else if err != nil {
			e.Err = fmt.Errorf("invalid JSON: %w", err)
		}
		errs.Add(e)
		return errs.Err()
	}
	r := &run{input: string(doc), now: p.clock()}
	var out []morse.Metric
	for i := range p.configs {
		ms, err := r.table(&p.configs[i], p.locs[i])
		if err != nil {
			errs.Add(parsers.EntryError{Err: fmt.Errorf("json_v2[%d]: %w", i, err)})
			return errs.Err()
		}
		out = append(out, ms...)
	}
	for _, m := range out {
		emit(m)
	}
	for _, err := range r.cut {
		errs.Add(parsers.EntryError{Err: fmt.Errorf("values after this one left out: %w", err)})
	}
	if r.noFields > 0 {
		errs.Add(parsers.EntryError{Err: fmt.Errorf("%w: %d metrics had only tags", ErrNoFields, r.noFields)})
		errs.Refused += r.noFields - 1
	}
	return errs.Err()
}

// table builds the metrics of one [[json_v2]] table.
func (r *run) table(c *Config, loc *time.Location) ([]morse.Metric, error) {
	r.name = c.MeasurementName
	if c.MeasurementNamePath != "" {
		if res := gjson.Get(r.input, c.MeasurementNamePath); !res.IsArray() && !res.IsObject() {
			r.name = res.String()
		}
	}
	t := r.now
	if c.TimestampPath != "" {
		res := gjson.Get(r.input, c.TimestampPath)
		if res.Type == gjson.Null {
			return nil, fmt.Errorf("the timestamp path %q returned NULL", c.TimestampPath)
		}
		if !res.IsArray() && !res.IsObject() {
			if c.TimestampFormat == "" {
				return nil, errors.New("use of timestamp_path requires timestamp_format")
			}
			var err error
			if t, err = timeformat.Parse(c.TimestampFormat, res.String(), loc); err != nil {
				return nil, fmt.Errorf("unable to parse timestamp %q: %w", res.String(), err)
			}
		}
	}
	fields, err := r.sets(c.Fields, false, t)
	if err != nil {
		return nil, err
	}
	tags, err := r.sets(c.Tags, true, t)
	if err != nil {
		return nil, err
	}
	objects, err := r.objects(c.Objects, t)
	if err != nil {
		return nil, err
	}
	ms := product(tags, fields)
	if len(objects) != 0 && len(ms) != 0 {
		ms = product(objects, ms)
	} else {
		ms = append(ms, objects...)
	}
	return r.finish(ms)
}

// finish turns the partial metrics into metrics, refusing those without a name or field.
func (r *run) finish(ms []*partial) ([]morse.Metric, error) {
	out := make([]morse.Metric, 0, len(ms))
	for _, m := range ms {
		switch {
		case len(m.fields) == 0:
			// Telegraf drops a metric without fields when it is added; here it is counted.
			r.noFields++
		case r.name == "":
			return nil, ErrNoName
		default:
			out = append(out, morse.NewMetric(r.name, m.tags, m.fields, m.time))
		}
	}
	return out, nil
}

// sets reads the [[json_v2.field]] or [[json_v2.tag]] tables: the metrics of each are
// combined with those of the ones before.
func (r *run) sets(sets []DataSet, tag bool, t time.Time) ([]*partial, error) {
	r.iterateObjects = false
	var acc []*partial
	for _, s := range sets {
		res := gjson.Get(r.input, s.Path)
		if !res.Exists() {
			if s.Optional {
				continue
			}
			return nil, fmt.Errorf("the path %q doesn't exist", s.Path)
		}
		if res.IsObject() && s.Type != "string" {
			continue // an object is read by [[json_v2.object]]
		}
		name := s.Rename
		if name == "" {
			name = s.Path[strings.LastIndexByte(s.Path, '.')+1:]
		}
		name = strings.ReplaceAll(name, " ", "_")
		n := node{out: name, set: name, typ: s.Type, tag: tag, m: newPartial(t), Result: res, parent: res.Index}
		ms, err := r.expand(n, t)
		if err != nil {
			return nil, err
		}
		acc = product(acc, ms)
	}
	return acc, nil
}
