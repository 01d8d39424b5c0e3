package kafka_consumer

import (
	"errors"
	"time"

	"github.com/morse-agent/morse"
	common "github.com/morse-agent/morse/plugins/common/kafka"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/parsers/metricjson"
	"github.com/morse-agent/morse/plugins/parsers/msgpack"
)

// parseFunc reads the metrics of one message. It emits what it could read and reports the
// rest in its error.
type parseFunc func(data []byte, emit func(morse.Metric)) error

// Format holds data_format and the options of each format's parser, with Telegraf's keys.
type Format struct {
	DataFormat string `toml:"data_format"` // "influx" (default), "json" or "msgpack"

	// InfluxTimestampPrecision is the unit of timestamps in line protocol ("ns" if unset).
	InfluxTimestampPrecision string `toml:"influx_timestamp_precision"`
	// InfluxParserType is Telegraf's choice of parser ("internal" or "upstream"); morse
	// has one, so it is accepted as either.
	InfluxParserType string `toml:"influx_parser_type"`

	JSONTimestampUnits  morse.Duration `toml:"json_timestamp_units"`
	JSONTimestampFormat string         `toml:"json_timestamp_format"`
}

func (f *Format) validate() error {
	errs := []error{common.CheckDataFormat(f.DataFormat)}
	if _, err := influx.ParsePrecision(f.InfluxTimestampPrecision); err != nil {
		errs = append(errs, morse.Errorf("influx_timestamp_precision", "%w", err))
	}
	switch f.InfluxParserType {
	case "", "internal", "upstream":
	default:
		errs = append(errs, morse.Errorf("influx_parser_type", "must be \"internal\" or \"upstream\", got %q", f.InfluxParserType))
	}
	return errors.Join(errs...)
}

// parser builds the parser of the format. lines, when not nil, is asked per message whether
// line protocol may be handed on as line metrics, unparsed (morse.LineAccumulator).
func (f *Format) parser(lines func() bool) (parseFunc, error) {
	switch f.DataFormat {
	case "json":
		p := &metricjson.Parser{TimestampUnits: time.Duration(f.JSONTimestampUnits), TimestampFormat: f.JSONTimestampFormat}
		return func(data []byte, emit func(morse.Metric)) error {
			_, err := p.Parse(data, emit)
			return err
		}, nil
	case "msgpack":
		p := &msgpack.Parser{}
		return func(data []byte, emit func(morse.Metric)) error {
			_, err := p.Parse(data, emit)
			return err
		}, nil
	default:
		prec, err := influx.ParsePrecision(f.InfluxTimestampPrecision)
		if err != nil {
			return nil, morse.Errorf("influx_timestamp_precision", "%w", err)
		}
		p := &influx.Parser{Precision: prec, LineMetrics: lines}
		return func(data []byte, emit func(morse.Metric)) error {
			return p.Parse(data, emit).Err()
		}, nil
	}
}
