// Package value reads Telegraf's "value" data format: a payload is one value, such as a
// command's output or a file's content, which becomes one metric with one field.
//
// As in Telegraf, NUL bytes and white space around the payload are dropped; for every
// data_type but string, the payload is split at white space and only its last word is read,
// so the last line of a multi-line output wins. A string is the whole trimmed payload and
// base64 the encoding of the payload as it came. A payload without a word gives no metric,
// except for string, which gives an empty string as Telegraf does.
package value

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// Options are Telegraf's options of the value data format.
type Options struct {
	// DataType (data_type) is the type of the value: "integer" (also "int", and the
	// default when unset), "float" (also "long"), "string" (also "str"), "base64",
	// "boolean" (also "bool"), "auto_integer" or "auto_float". The auto types read the
	// number where the value is one and keep it as a string otherwise.
	DataType string `toml:"data_type"`
	// ValueFieldName (value_field_name) names the field; unset means "value".
	ValueFieldName string `toml:"value_field_name"`
}

// kind is a data_type with its aliases resolved.
type kind uint8

const (
	kindInt kind = iota
	kindFloat
	kindString
	kindBase64
	kindBool
	kindAutoInt
	kindAutoFloat
)

func kindOf(dataType string) (kind, bool) {
	switch dataType {
	case "", "int", "integer":
		return kindInt, true
	case "float", "long":
		return kindFloat, true
	case "str", "string":
		return kindString, true
	case "base64":
		return kindBase64, true
	case "bool", "boolean":
		return kindBool, true
	case "auto_integer":
		return kindAutoInt, true
	case "auto_float":
		return kindAutoFloat, true
	}
	return 0, false
}

// Validate reports every problem of the options.
func (o *Options) Validate() error {
	if _, ok := kindOf(o.DataType); !ok {
		return morse.Errorf("data_type", "unknown data type %q: use \"integer\", \"float\", \"string\", "+
			"\"base64\", \"boolean\", \"auto_integer\" or \"auto_float\"", o.DataType)
	}
	return nil
}

// Parser reads the value format. Its fields are configuration only, so one Parser may be
// used by many goroutines at once.
type Parser struct {
	kind  kind
	field string
	s     parsers.Settings
}

// New builds a Parser; the metric is named s.MetricName.
func New(o Options, s parsers.Settings) (*Parser, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	k, _ := kindOf(o.DataType)
	field := o.ValueFieldName
	if field == "" {
		field = "value"
	}
	return &Parser{kind: k, field: field, s: s}, nil
}

// Parse reads data as one value and emits its metric. A value that is not of data_type is
// refused, with the line and column where its word starts.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) error {
	text, start := p.text(data)
	if len(text) == 0 && p.kind != kindString {
		return nil // Telegraf's split finds no word: no metric, no error
	}
	v, err := p.value(data, text)
	if err != nil {
		line, col := parsers.Position(data, start)
		errs := &parsers.Error{}
		errs.Add(parsers.EntryError{Line: line, Column: col, Text: parsers.Excerpt(text), Err: err})
		return errs
	}
	emit(morse.NewMetric(p.s.MetricName, nil, []morse.Field{{Key: p.field, Value: v}}, p.s.Clock()()))
	return nil
}

// text returns the part of data that holds the value and its offset in data.
func (p *Parser) text(data []byte) ([]byte, int) {
	start := len(data) - len(bytes.TrimLeft(data, "\x00"))
	text := bytes.Trim(data, "\x00")
	lead := len(text) - len(bytes.TrimLeftFunc(text, unicode.IsSpace))
	start += lead
	text = bytes.TrimSpace(text)
	if p.kind == kindString || p.kind == kindBase64 {
		return text, start
	}
	if i := bytes.LastIndexFunc(text, unicode.IsSpace); i >= 0 {
		_, size := utf8.DecodeRune(text[i:])
		start += i + size
		text = text[i+size:]
	}
	return text, start
}

// typeError says what the value is not and why, with strconv's reason ("invalid syntax",
// "value out of range") but not its quote of the text, which the EntryError holds.
func typeError(what string, err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		err = ne.Err
	}
	return fmt.Errorf("not %s (%w)", what, err)
}

func (p *Parser) value(data, text []byte) (morse.Value, error) {
	switch p.kind {
	case kindString:
		return morse.String(string(text)), nil
	case kindBase64:
		return morse.String(base64.StdEncoding.EncodeToString(data)), nil
	case kindInt, kindAutoInt:
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err == nil {
			return morse.Int(n), nil
		}
		if p.kind == kindAutoInt {
			return morse.String(string(text)), nil
		}
		return morse.Value{}, typeError("an integer", err)
	case kindFloat, kindAutoFloat:
		f, err := strconv.ParseFloat(string(text), 64)
		if err == nil {
			return morse.Float(f), nil
		}
		if p.kind == kindAutoFloat {
			return morse.String(string(text)), nil
		}
		return morse.Value{}, typeError("a float", err)
	default:
		b, err := strconv.ParseBool(string(text))
		if err != nil {
			return morse.Value{}, typeError("a boolean", err)
		}
		return morse.Bool(b), nil
	}
}

var _ parsers.Parser = (*Parser)(nil)
