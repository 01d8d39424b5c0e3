// Package converter is the converter processor: it changes the type of tags and fields, and
// turns them into the measurement name, a tag or the timestamp, with Telegraf's
// processors.converter options and behaviour.
package converter

import (
	_ "embed"
	"errors"
	"log/slog"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/throttle"
	"github.com/morse-agent/morse/plugins/common/glob"
	"github.com/morse-agent/morse/plugins/processors/internal/edit"
)

//go:embed sample.conf
var sampleConfig string

// Description is the one-line summary shown by `morse config`.
const Description = "Convert values to another metric value type"

func init() {
	morse.RegisterProcessor(morse.ProcessorInfo{
		Name:         "converter",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Processor { return &Converter{} },
	})
}

// Converter converts the tags and fields that its globs select.
type Converter struct {
	Tags   *Conversion `toml:"tags"`
	Fields *Conversion `toml:"fields"`

	tags, fields *rules
	log          *slog.Logger
	failures     *throttle.Throttle
}

// Conversion lists, for each target, the keys (globs) to convert to it.
type Conversion struct {
	Measurement       []string `toml:"measurement"`
	Tag               []string `toml:"tag"`
	String            []string `toml:"string"`
	Integer           []string `toml:"integer"`
	Unsigned          []string `toml:"unsigned"`
	Boolean           []string `toml:"boolean"`
	Float             []string `toml:"float"`
	Timestamp         []string `toml:"timestamp"`
	TimestampFormat   string   `toml:"timestamp_format"`
	Base64IEEEFloat32 []string `toml:"base64_ieee_float32"`
}

// target is what a key is converted to.
type target uint8

const (
	toMeasurement target = iota
	toTag
	toStringType
	toIntegerType
	toUnsignedType
	toBooleanType
	toFloatType
	toTimestamp
	toBase64Float
)

// rule selects the keys that go to one target.
type rule struct {
	target target
	match  *glob.Matcher
}

// rules are the compiled conversions of tags or of fields, in the order in which Telegraf
// tries them: the first rule whose glob matches a key decides.
type rules struct {
	list []rule
	time timeParser
}

// SetLogger gives the processor the engine's logger.
func (c *Converter) SetLogger(l *slog.Logger) { c.log = l }

// Validate compiles the globs and checks the options, so that Apply has nothing to check.
func (c *Converter) Validate() error {
	if c.Tags == nil && c.Fields == nil {
		return morse.Errorf("tags", "neither tags nor fields are set: the processor would do nothing")
	}
	var errs []error
	var err error
	if c.Tags != nil {
		if len(c.Tags.Tag) > 0 {
			errs = append(errs, morse.Errorf("tags.tag", "a tag is a tag already"))
		}
		if len(c.Tags.Base64IEEEFloat32) > 0 {
			errs = append(errs, morse.Errorf("tags.base64_ieee_float32", "applies to fields only"))
		}
		c.tags, err = compile("tags", c.Tags, tagOrder)
		errs = append(errs, err)
	}
	if c.Fields != nil {
		c.fields, err = compile("fields", c.Fields, fieldOrder)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// The order in which Telegraf tries the targets: the first whose glob matches a key decides.
var (
	tagOrder   = []target{toMeasurement, toStringType, toIntegerType, toUnsignedType, toBooleanType, toFloatType, toTimestamp}
	fieldOrder = []target{toMeasurement, toTag, toFloatType, toIntegerType, toUnsignedType, toBooleanType, toStringType, toTimestamp, toBase64Float}
)

// keys returns the globs that conv lists for t.
func (conv *Conversion) keys(t target) []string {
	return [...][]string{
		toMeasurement: conv.Measurement, toTag: conv.Tag, toStringType: conv.String,
		toIntegerType: conv.Integer, toUnsignedType: conv.Unsigned, toBooleanType: conv.Boolean,
		toFloatType: conv.Float, toTimestamp: conv.Timestamp, toBase64Float: conv.Base64IEEEFloat32,
	}[t]
}

func compile(section string, conv *Conversion, order []target) (*rules, error) {
	r := &rules{}
	var errs []error
	for _, t := range order {
		m, err := glob.Compile(section+"."+targetNames[t], conv.keys(t))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m != nil {
			r.list = append(r.list, rule{target: t, match: m})
		}
	}
	if len(conv.Timestamp) > 0 {
		tp, err := newTimeParser(conv.TimestampFormat)
		if err != nil {
			errs = append(errs, morse.Errorf(section+".timestamp_format", "%v", err))
		}
		r.time = tp
	}
	return r, errors.Join(errs...)
}

// Init compiles the options of a converter built in code without Validate.
func (c *Converter) Init() error {
	if c.failures == nil {
		c.failures = throttle.New(30 * time.Second)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.tags == nil && c.fields == nil {
		return c.Validate()
	}
	return nil
}

func (r *rules) find(key string) (target, bool) {
	for _, rl := range r.list {
		if rl.match.Match(key) {
			return rl.target, true
		}
	}
	return 0, false
}

// Apply converts the metrics of in in place.
func (c *Converter) Apply(in []morse.Metric) []morse.Metric {
	for i, m := range in {
		e := edit.Start(m)
		if c.tags != nil {
			c.convertTags(&e)
		}
		if c.fields != nil {
			c.convertFields(&e)
		}
		in[i] = e.Metric()
	}
	return in
}

// fail logs a value that could not be converted, throttled: one bad field in every metric
// must not flood the journal.
func (c *Converter) fail(kind, key string, v morse.Value, to target, err error) {
	c.failures.Log(c.log, slog.LevelError, "converter: cannot convert, dropped it",
		kind, key, "value", v.String(), "to", targetNames[to], "error", err)
}

var targetNames = [...]string{"measurement", "tag", "string", "integer", "unsigned", "boolean", "float", "timestamp", "base64_ieee_float32"}
