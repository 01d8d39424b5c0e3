package dataformat_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// TestLoadCSVOptions: data_format "csv" is registered, its csv_* keys are the input's own,
// its problems come in the same run as the input's, and its keys are refused under
// another format.
func TestLoadCSVOptions(t *testing.T) {
	in, err := load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "csv"
  csv_header_row_count = 1
  csv_tag_columns = ["host"]
  csv_timestamp_column = "time"
  csv_timestamp_format = "unix_ms"
  csv_reset_mode = "always"`)
	require.NoError(t, err)
	require.Equal(t, dataformat.CSV{HeaderRowCount: 1, TagColumns: []string{"host"}, TimestampColumn: "time",
		TimestampFormat: "unix_ms", ResetMode: "always"}, in.CSV)

	_, err = load(t, `[[inputs.fmt]]
  data_format = "csv"
  csv_column_types = ["integer"]
  csv_timestamp_column = "time"
  logfmt_tag_keys = ["a"]`)
	require.EqualError(t, err, ""+
		"t.conf:1: inputs.fmt.csv_header_row_count: must be set when csv_column_names is not\n"+
		"t.conf:1: inputs.fmt.csv_timestamp_format: required with csv_timestamp_column\n"+
		"t.conf:1: inputs.fmt.files: is required\n"+
		"t.conf:3: inputs.fmt.csv_column_types: \"integer\" is not int, float, bool or string\n"+
		"t.conf:5: inputs.fmt.logfmt_tag_keys: is an option of data_format \"logfmt\", not of \"csv\"")

	_, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  csv_header_row_count = 1`)
	require.EqualError(t, err, "t.conf:3: inputs.fmt.csv_header_row_count: is an option of data_format \"csv\", not of \"influx\"")
}

// TestCSVKeepsGoodEntries: as every format, csv keeps the rows around a bad one and places
// the bad one, and its parser reads line by line too.
func TestCSVKeepsGoodEntries(t *testing.T) {
	c := dataformat.Config{DataFormat: "csv", CSV: dataformat.CSV{HeaderRowCount: 1, ColumnTypes: []string{"int", "string"}}}
	got, err := parse(t, c, "x,s\n1,a\nbad,b\n3,c\n")
	require.Equal(t, []string{`test x=1i,s="a" 7000000000`, `test x=3i,s="c" 7000000000`}, got)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Refused)
	require.Equal(t, 3, pe.Entries[0].Line)
	require.Equal(t, 1, pe.Entries[0].Column)

	p, err := c.NewParser(parsers.Settings{MetricName: "test"})
	require.NoError(t, err)
	_, ok := p.(parsers.LineParser)
	require.True(t, ok, "tail and socket_listener hand csv one line at a time")
}
