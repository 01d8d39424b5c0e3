package kafka_consumer

import (
	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// parseFunc reads the metrics of one message. It emits what it could read and reports the
// rest in its error, a *parsers.Error where the format places its entries.
type parseFunc func(data []byte, emit func(morse.Metric)) error

// Format holds data_format and the options of each format's parser, with Telegraf's keys
// (dataformat.Config); the consumer embeds it under this name.
type Format = dataformat.Config

// newParser builds the parser of the format. lines, when not nil, is asked per message
// whether line protocol may be handed on as line metrics, unparsed (morse.LineAccumulator).
// Every format's parser may be used by several goroutines at once.
func newParser(f *Format, lines func() bool) (parseFunc, error) {
	p, err := f.NewParser(parsers.Settings{MetricName: "kafka_consumer"})
	if err != nil {
		return nil, err
	}
	if e, ok := p.(influx.Entries); ok {
		e.LineMetrics = lines
	}
	return p.Parse, nil
}
