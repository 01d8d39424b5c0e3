package csv

import (
	"encoding/csv"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// The reasons a data row is refused, besides a csv syntax error and a bad value.
var (
	ErrNoFields  = errors.New("no fields")
	ErrNoTime    = errors.New("no value in the timestamp column")
	errTypeCount = errors.New("more columns than csv_column_types")
)

// builder turns data rows into metrics. Its slices are reused from row to row, and each
// metric gets copies of exactly its size.
type builder struct {
	p      *Parser
	emit   func(morse.Metric)
	errs   *parsers.Error
	r      *csv.Reader // for the positions of a refused row's fields
	n      int         // how many fields the reader's last row has
	line   int         // lines of the payload before the reader's first
	rows   rowText
	tags   []morse.Tag
	fields []morse.Field
}

// row makes one metric of record, the reader's last, or refuses it.
func (b *builder) row(record []string) {
	p := b.p
	b.n = len(record)
	skip := min(p.o.SkipColumns, len(record))
	b.tags, b.fields = b.tags[:0], b.fields[:0]
	if p.o.TagOverwrite {
		b.tags = append(b.tags, p.st.meta...)
	}
	r, err := b.columns(record[skip:])
	if err != nil {
		b.refuse(r.at+skip, err)
		return
	}
	if !p.o.TagOverwrite {
		b.tags = append(b.tags, p.st.meta...)
	}
	t, err := b.time(r.stamp, r.stampAt)
	if err != nil {
		b.refuse(max(r.stampAt, 0)+skip, err)
		return
	}
	if len(b.fields) == 0 {
		b.refuse(0, ErrNoFields)
		return
	}
	b.emit(morse.NewMetric(r.name, clone(b.tags), clone(b.fields), t))
}

// rowInfo is what a row's columns give besides tags and fields.
type rowInfo struct {
	name    string // the metric's name
	stamp   string // the timestamp column's value
	stampAt int    // its column, -1 if the row has none
	at      int    // the column of a value that refused the row
}

// columns adds the row's values (csv_skip_columns removed) to b.tags and b.fields by the
// column plan, in Telegraf's order: a value in csv_skip_values is left out whatever its
// column, then tag columns, the timestamp column, and fields (the measurement column's
// value names the metric instead).
func (b *builder) columns(values []string) (rowInfo, error) {
	p := b.p
	r := rowInfo{name: p.settings.MetricName, stampAt: -1}
	for i, c := range p.st.plan {
		if i >= len(values) {
			break
		}
		v := values[i]
		if p.o.TrimSpace {
			v = strings.Trim(v, " ")
		}
		if _, skipped := p.skipSet[v]; skipped {
			continue
		}
		switch c.kind {
		case kindNone:
			continue
		case kindTag:
			if v != "" { // line protocol has no empty tag value
				b.tags = append(b.tags, morse.Tag{Key: c.name, Value: v})
			}
			continue
		case kindTime:
			r.stamp, r.stampAt = v, i
			if c.measurement && v != "" {
				r.name = v
			}
			continue
		}
		val, err := c.convert(v)
		if err != nil {
			r.at = i
			return r, fmt.Errorf("column %q: %w", c.name, err)
		}
		if !c.measurement {
			b.fields = setField(b.fields, c.name, val, p.st.dupNames)
		} else if val.Type() != morse.TypeString || val.Str() != "" {
			r.name = fmt.Sprint(val.Interface())
		}
	}
	return r, nil
}

// refuse counts the reader's last row as refused, placed at its field i.
func (b *builder) refuse(i int, err error) {
	if i >= b.n {
		i = 0
	}
	start, _ := b.r.FieldPos(0)
	line, col := b.r.FieldPos(i)
	b.errs.Add(parsers.EntryError{Line: b.line + line, Column: col, Text: b.rows.line(start), Err: err})
}

// time reads the row's timestamp, or gives the time now without a timestamp column.
func (b *builder) time(stamp string, at int) (time.Time, error) {
	p := b.p
	if p.o.TimestampColumn == "" {
		return p.settings.Clock()(), nil
	}
	if at < 0 {
		return time.Time{}, fmt.Errorf("%w %q", ErrNoTime, p.o.TimestampColumn)
	}
	t, err := p.timeFmt.parse(stamp)
	if err != nil {
		return time.Time{}, fmt.Errorf("column %q: %w", p.o.TimestampColumn, err)
	}
	return t, nil
}

// setField adds a field; where two columns share a name (dup), the later one's value
// replaces the earlier one's, as in Telegraf.
func setField(fields []morse.Field, key string, v morse.Value, dup bool) []morse.Field {
	if dup {
		for i := range fields {
			if fields[i].Key == key {
				fields[i].Value = v
				return fields
			}
		}
	}
	return append(fields, morse.Field{Key: key, Value: v})
}

func clone[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	out := make([]T, len(s))
	copy(out, s)
	return out
}

// convert reads a field value by the column's declared type or, without one, by Telegraf's
// inference.
func (c *column) convert(v string) (morse.Value, error) {
	switch {
	case c.noType:
		return morse.Value{}, errTypeCount
	case !c.typed:
		return infer(v), nil
	}
	switch c.typ {
	case typeInt:
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return morse.Value{}, fmt.Errorf("%q is not an int: %w", v, unwrapNum(err))
		}
		return morse.Int(i), nil
	case typeFloat:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return morse.Value{}, fmt.Errorf("%q is not a float: %w", v, unwrapNum(err))
		}
		return morse.Float(f), nil
	case typeBool:
		x, err := strconv.ParseBool(v)
		if err != nil {
			return morse.Value{}, fmt.Errorf("%q is not a bool: %w", v, unwrapNum(err))
		}
		return morse.Bool(x), nil
	}
	return morse.String(v), nil
}

// unwrapNum returns strconv's reason (invalid syntax, value out of range) without the
// function name and the value, which the message already quotes.
func unwrapNum(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// infer types a value as Telegraf does: an int if strconv.ParseInt reads it in base 10,
// else a float if strconv.ParseFloat reads it, else a bool if strconv.ParseBool reads it,
// else a string. The checks before each call only skip calls that would fail, so that a
// string column costs no error values.
func infer(v string) morse.Value {
	if maybeInt(v) {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return morse.Int(i)
		}
	}
	if maybeFloat(v) {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return morse.Float(f)
		}
	}
	switch v {
	case "t", "T", "TRUE", "true", "True": // "1" and "0" are ints already
		return morse.Bool(true)
	case "f", "F", "FALSE", "false", "False":
		return morse.Bool(false)
	}
	return morse.String(v)
}

// maybeInt is whether v has the syntax strconv.ParseInt(v, 10, 64) takes: a sign, then
// decimal digits.
func maybeInt(v string) bool {
	if v != "" && (v[0] == '+' || v[0] == '-') {
		v = v[1:]
	}
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// floatBytes are the bytes of anything strconv.ParseFloat takes: decimal and hexadecimal
// numbers with exponents and underscores, and "inf", "infinity", "nan" in any case.
var floatBytes = func() (set [256]bool) {
	for _, c := range "0123456789+-._xXpPeEaAbBcCdDfFiInNtTyY" {
		set[c] = true
	}
	return set
}()

func maybeFloat(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !floatBytes[v[i]] {
			return false
		}
	}
	return true
}
