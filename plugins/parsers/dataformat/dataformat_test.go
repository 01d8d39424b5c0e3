package dataformat_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// formatInput is an input as the real ones are written: Config embedded beside its own
// options, its Validate calling Config's.
type formatInput struct {
	dataformat.Config
	Files []string `toml:"files"`
}

func (*formatInput) Gather(context.Context, morse.Accumulator) error { return nil }

func (in *formatInput) Validate() error {
	var errs []error
	if len(in.Files) == 0 {
		errs = append(errs, morse.Errorf("files", "is required"))
	}
	return errors.Join(append(errs, in.Config.Validate())...)
}

func load(t *testing.T, text string) (*formatInput, error) {
	t.Helper()
	reg := morse.NewRegistry()
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "fmt", New: func() morse.Input { return &formatInput{} }}))
	require.NoError(t, reg.AddOutput(morse.OutputInfo{Name: "discard", New: func() morse.Output { return discard{} }}))
	cfg, err := config.Load(config.Options{Registry: reg, Sources: []config.Source{{Name: "t.conf",
		Data: []byte(text + "\n[[outputs.discard]]\n")}}})
	if err != nil {
		return nil, err
	}
	return cfg.Inputs[0].Plugin.(*formatInput), nil
}

type discard struct{}

func (discard) Connect(context.Context) error               { return nil }
func (discard) Write(context.Context, []morse.Metric) error { return nil }
func (discard) Close() error                                { return nil }

// TestLoadDecodesEmbeddedOptions: the keys of each format's Options are the input's own
// keys, through two embedded levels, and InfluxDB's unit names are read as Telegraf's
// durations are.
func TestLoadDecodesEmbeddedOptions(t *testing.T) {
	in, err := load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "influx"
  influx_timestamp_precision = "1ms"
  influx_parser_type = "upstream"`)
	require.NoError(t, err)
	require.Equal(t, "influx", in.DataFormat)
	require.Equal(t, influx.Precision(time.Millisecond), in.InfluxTimestampPrecision)
	require.Equal(t, "upstream", in.InfluxParserType)

	in, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  influx_timestamp_precision = "s"`)
	require.NoError(t, err)
	require.Equal(t, influx.Precision(time.Second), in.InfluxTimestampPrecision)
	require.Equal(t, "influx", in.Format())
}

// TestLoadReportsEveryProblem is the case (with a format that is still unknown,
// now that grok is registered): an unknown data_format, a misspelt option, an option of
// another format and a problem of the input's own, in one Load.
func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := load(t, `[[inputs.fmt]]
  data_format = "collectd"
  collectd_typesdb = ["/usr/share/collectd/types.db"]
  json_timestamp_format = "2006"`)
	require.EqualError(t, err, ""+
		"t.conf:1: inputs.fmt.files: is required\n"+
		"t.conf:2: inputs.fmt.data_format: \"collectd\" is not a data format morse reads: use one of "+quoted()+"\n"+
		"t.conf:3: inputs.fmt.collectd_typesdb: unknown key")

	_, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  influx_timestamp_precision = "1m"
  influx_parser_type = "fast"
  json_query = "data"`)
	require.EqualError(t, err, ""+
		"t.conf:3: inputs.fmt.influx_timestamp_precision: 1m0s is not supported: use \"1ns\", \"1us\", \"1ms\" or \"1s\"\n"+
		"t.conf:4: inputs.fmt.influx_parser_type: must be \"internal\" or \"upstream\", got \"fast\"\n"+
		"t.conf:5: inputs.fmt.json_query: is an option of data_format \"json\", not of \"influx\"")
}

func quoted() string {
	s := ""
	for i, f := range dataformat.Formats() {
		if i > 0 {
			s += ", "
		}
		s += `"` + f + `"`
	}
	return s
}

// parse builds the parser of c and parses data, returning the metrics as line protocol.
func parse(t *testing.T, c dataformat.Config, data string) ([]string, error) {
	t.Helper()
	p, err := c.NewParser(parsers.Settings{MetricName: "test", Now: func() time.Time { return time.Unix(7, 0) }})
	require.NoError(t, err)
	var got []string
	err = p.Parse([]byte(data), func(m morse.Metric) {
		got = append(got, strings.TrimSuffix(testutil.Format([]morse.Metric{m}), "\n"))
	})
	return got, err
}

// TestEveryFormatKeepsGoodEntries: each format emits the entries around a bad one and
// reports the bad one with its position where the format has lines.
func TestEveryFormatKeepsGoodEntries(t *testing.T) {
	got, err := parse(t, dataformat.Config{}, "a x=1i 1\nbad line\nb y=2 2\n")
	require.Equal(t, []string{"a x=1i 1", "b y=2 2"}, got)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Refused)
	require.Equal(t, 2, pe.Entries[0].Line)
	require.Equal(t, "bad line", pe.Entries[0].Text)

	got, err = parse(t, dataformat.Config{DataFormat: "metricjson"},
		`{"name":"a","fields":{"x":1},"timestamp":1}`+"\n"+`{"name":"b","fields":{"y":2},"timestamp":2}`+"\n"+`{"name": x}`)
	require.Equal(t, []string{"a x=1i 1000000000", "b y=2i 2000000000"}, got)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Refused)
	require.Equal(t, 3, pe.Entries[0].Line)
	require.Equal(t, 10, pe.Entries[0].Column)

	got, err = parse(t, dataformat.Config{DataFormat: "logfmt", Logfmt: dataformat.Logfmt{LogfmtTagKeys: []string{"host"}}},
		"host=a x=1\ny=\"\nhost=b x=2\n")
	require.Equal(t, []string{"test,host=a x=1i 7000000000", "test,host=b x=2i 7000000000"}, got)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Entries[0].Line)

	got, err = parse(t, dataformat.Config{DataFormat: "value", Value: dataformat.Value{DataType: "integer"}}, "12\n13x\n")
	require.Empty(t, got)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Entries[0].Line)
}

// TestLoadValueOptions: the options of a registered format are known keys and validated
// when it is chosen, and refused when another is.
func TestLoadValueOptions(t *testing.T) {
	in, err := load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "value"
  data_type = "float"
  value_field_name = "temp"`)
	require.NoError(t, err)
	require.Equal(t, dataformat.Value{DataType: "float", ValueFieldName: "temp"}, in.Value)

	_, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "value"
  data_type = "decimal"
  logfmt_tag_keys = ["a"]`)
	require.EqualError(t, err, ""+
		"t.conf:4: inputs.fmt.data_type: unknown data type \"decimal\": use \"integer\", \"float\", \"string\", \"base64\", \"boolean\", \"auto_integer\" or \"auto_float\"\n"+
		"t.conf:5: inputs.fmt.logfmt_tag_keys: is an option of data_format \"logfmt\", not of \"value\"")
}
