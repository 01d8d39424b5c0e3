package dataformat

import (
	"errors"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/metricjson"
	"github.com/morse-agent/morse/plugins/parsers/msgpack"
)

// SerializedJSON is the options of data_format "metricjson", morse's name for the shape that
// Telegraf's and morse's JSON serializers write (plugins/parsers/metricjson), for reading
// back what a morse or Telegraf output wrote with data_format "json". Telegraf has no parser
// of that shape; its data_format "json" is the flattening parser (plugins/parsers/json).
type SerializedJSON struct {
	// JSONTimestampUnits (json_timestamp_units) is the unit of numeric timestamps; unset
	// means 1s, the serializer's default.
	JSONTimestampUnits morse.Duration `toml:"json_timestamp_units"`
	// JSONTimestampFormat (json_timestamp_format) is the Go layout of string timestamps;
	// unset means RFC 3339.
	JSONTimestampFormat string `toml:"json_timestamp_format"`
}

// Validate reports every problem of the options.
func (o *SerializedJSON) Validate() error {
	if o.JSONTimestampUnits < 0 {
		return morse.Errorf("json_timestamp_units", "must not be negative, got %s", o.JSONTimestampUnits)
	}
	return nil
}

// serializedJSON reads the serializers' JSON shape under the parsers.Parser contract.
type serializedJSON struct{ p *metricjson.Parser }

func newSerializedJSON(o SerializedJSON, s parsers.Settings) parsers.Parser {
	return serializedJSON{&metricjson.Parser{TimestampUnits: time.Duration(o.JSONTimestampUnits),
		TimestampFormat: o.JSONTimestampFormat, Now: s.Now}}
}

// Parse reads every object of data. The reader reports its first problem and how many
// values it skipped; a syntax error is placed at its line and column.
func (j serializedJSON) Parse(data []byte, emit func(morse.Metric)) error {
	_, err := j.p.Parse(data, emit)
	var je *metricjson.Error
	if !errors.As(err, &je) {
		return err
	}
	entry := parsers.EntryError{Err: je.First}
	var se *metricjson.SyntaxError
	if errors.As(je.First, &se) {
		entry.Line, entry.Column = parsers.Position(data, se.Offset)
	}
	return &parsers.Error{Refused: je.Skipped, Entries: []parsers.EntryError{entry}}
}

// msgpackEntries reads MessagePack under the parsers.Parser contract.
type msgpackEntries struct{ p *msgpack.Parser }

// Parse reads every map of data. MessagePack has no lines, so the entry has no position.
func (m msgpackEntries) Parse(data []byte, emit func(morse.Metric)) error {
	_, err := m.p.Parse(data, emit)
	var me *msgpack.Error
	if !errors.As(err, &me) {
		return err
	}
	return &parsers.Error{Refused: me.Skipped, Entries: []parsers.EntryError{{Err: me.First}}}
}
