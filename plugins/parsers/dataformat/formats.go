package dataformat

import (
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/influx"
	"github.com/morse-agent/morse/plugins/parsers/msgpack"
)

// formats is every data format that NewParser builds. A format is added with one line that
// embeds its Options in Config (through an alias, as Influx) and one entry here.
var formats = []format{
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
		options: func(c *Config) validator { return &c.SerializedJSON },
		build: func(c *Config, s parsers.Settings) (parsers.Parser, error) {
			return newSerializedJSON(c.SerializedJSON, s), nil
		},
	},
	{
		name: "msgpack",
		build: func(_ *Config, s parsers.Settings) (parsers.Parser, error) {
			return msgpackEntries{&msgpack.Parser{Now: s.Now}}, nil
		},
	},
}
