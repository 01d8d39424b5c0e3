package dataformat_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// TestLoadGrokOptions: data_format "grok" is registered, its grok_* keys are the input's
// own and its problems come in the same run as the input's; a grok config no longer fails
// first on "unknown key grok_patterns" and then on the format.
func TestLoadGrokOptions(t *testing.T) {
	in, err := load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "grok"
  grok_patterns = ['%{NUMBER:value:int} %{WORD:host:tag}']
  grok_custom_patterns = '''
    MINE \d+
  '''
  grok_custom_pattern_files = []
  grok_named_patterns = []
  grok_multiline = false
  grok_timezone = "Europe/Berlin"
  grok_unique_timestamp = "disable"`)
	require.NoError(t, err)
	require.Equal(t, []string{"%{NUMBER:value:int} %{WORD:host:tag}"}, in.Grok.GrokPatterns)
	require.Equal(t, "disable", in.Grok.GrokUniqueTimestamp)

	_, err = load(t, `[[inputs.fmt]]
  data_format = "grok"
  grok_patterns = ['%{NUMBER:value:integer}']
  grok_timezone = "Mars/Olympus"
  csv_header_row_count = 1`)
	require.EqualError(t, err, ""+
		"t.conf:1: inputs.fmt.files: is required\n"+
		"t.conf:3: inputs.fmt.grok_patterns: \"%{NUMBER:value:integer}\": unknown modifier \"integer\" in %{NUMBER:value:integer}\n"+
		"t.conf:4: inputs.fmt.grok_timezone: unknown time zone \"Mars/Olympus\" (an IANA name such as \"Europe/Berlin\", \"UTC\" or \"Local\")\n"+
		"t.conf:5: inputs.fmt.csv_header_row_count: is an option of data_format \"csv\", not of \"grok\"")

	_, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  grok_patterns = ["%{COMMON_LOG_FORMAT}"]`)
	require.EqualError(t, err, "t.conf:3: inputs.fmt.grok_patterns: is an option of data_format \"grok\", not of \"influx\"")
}

// TestGrokKeepsGoodEntries: grok keeps the lines around one that matches no pattern, places
// that one, and reads line by line too.
func TestGrokKeepsGoodEntries(t *testing.T) {
	c := dataformat.Config{DataFormat: "grok", Grok: dataformat.Grok{GrokPatterns: []string{"%{NUMBER:x:int} %{WORD:s}"}}}
	got, err := parse(t, c, "1 a\nbad\n3 c\n")
	require.Equal(t, []string{`test x=1i,s="a" 7000000000`, `test x=3i,s="c" 7001000000`}, got)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Refused)
	require.Equal(t, 2, pe.Entries[0].Line)

	p, err := c.NewParser(parsers.Settings{MetricName: "test"})
	require.NoError(t, err)
	_, ok := p.(parsers.LineParser)
	require.True(t, ok, "tail and socket_listener hand grok one line at a time")
}
