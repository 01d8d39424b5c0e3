package dataformat

import (
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/csv"
	"github.com/morse-agent/morse/plugins/parsers/graphite"
	"github.com/morse-agent/morse/plugins/parsers/grok"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/parsers/json"
	"github.com/morse-agent/morse/plugins/parsers/json_v2"
	"github.com/morse-agent/morse/plugins/parsers/logfmt"
	"github.com/morse-agent/morse/plugins/parsers/msgpack"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
	"github.com/morse-agent/morse/plugins/parsers/value"
)

// formats is every data format that NewParser builds. A format is added with one line that
// embeds its Options in Config (through an alias, as Influx) and one entry here.
var formats = []format{
	{
		name:    "csv",
		options: func(c *Config) validator { return &c.CSV },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return csv.New(c.CSV, s)
		},
	},
	{
		name:    "graphite",
		options: func(c *Config) validator { return &c.Graphite },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return graphite.New(c.Graphite, s)
		},
	},
	{
		name:    "grok",
		options: func(c *Config) validator { return &c.Grok },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return grok.New(c.Grok, s)
		},
	},
	{
		name:    "influx",
		options: func(c *Config) validator { return &c.Influx },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			p, err := influx.New(c.Influx, s)
			if err != nil {
				return nil, err
			}
			return influx.Entries{Parser: p}, nil
		},
	},
	{
		name:    "json",
		options: func(c *Config) validator { return &c.JSON },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return json.New(c.JSON, s)
		},
	},
	{
		name:    "json_v2",
		options: func(c *Config) validator { return &c.JSONV2 },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return json_v2.New(c.JSONV2, s)
		},
	},
	{
		// The serializers' JSON shape, a morse format: Telegraf has no parser of it.
		name:    "metricjson",
		options: func(c *Config) validator { return &c.SerializedJSON },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return newSerializedJSON(c.SerializedJSON, s), nil
		},
	},
	{
		name:    "logfmt",
		options: func(c *Config) validator { return &c.Logfmt },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return logfmt.New(c.Logfmt, s)
		},
	},
	{
		name: "msgpack",
		build: func(_ *Config, s parsers.Settings) (parsers.Parser, error) {
			return msgpackEntries{&msgpack.Parser{Now: s.Now}}, nil
		},
	},
	{
		name:    "prometheus",
		options: func(c *Config) validator { return &c.Prometheus },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return prometheus.New(c.Prometheus, s)
		},
	},
	{
		name:    "value",
		options: func(c *Config) validator { return &c.Value },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return value.New(c.Value, s)
		},
	},
}
