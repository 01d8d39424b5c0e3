package json_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/json"
)

// now is the time of the parse in every case; a case whose time comes from the document
// shows another.
var now = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// newParser decodes a case's config as the options under [[inputs.file]].
func newParser(t testing.TB, config string) *json.Parser {
	t.Helper()
	var o json.Options
	md, err := toml.Decode(config, &o)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys the format does not take")
	p, err := json.New(o, parsers.Settings{MetricName: "file", Now: func() time.Time { return now }})
	require.NoError(t, err)
	return p
}

// run parses in and shows the metrics as line protocol, then what was refused.
func run(p parsers.Parser, in []byte) string {
	var ms []morse.Metric
	err := p.Parse(in, func(m morse.Metric) { ms = append(ms, m) })
	out := testutil.Format(ms)
	if err != nil {
		out += fmt.Sprintf("# refused %d\n", parsers.Refused(err))
		for _, line := range strings.Split(err.Error(), "\n") {
			out += "# " + line + "\n"
		}
	}
	return out
}

// TestGolden runs the cases of testdata: Telegraf 1.39.3's own test inputs and README
// examples, and morse's cases of malformed input.
func TestGolden(t *testing.T) {
	for _, c := range testutil.Cases(t, "testdata") {
		t.Run(c.Name, func(t *testing.T) {
			c.Check(t, run(newParser(t, c.Config), []byte(c.In)))
		})
	}
}

func TestValidate(t *testing.T) {
	strict := false
	o := json.Options{JSONTimeKey: "t", JSONTimezone: "Nowhere/City", TagKeys: []string{"a[", "ok"}, JSONStringFields: []string{"[z"}, JSONStrict: &strict}
	err := o.Validate()
	require.Error(t, err)
	for _, key := range []string{"json_time_format", "json_timezone", "tag_keys", "json_string_fields"} {
		var fe *morse.FieldError
		found := false
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if errors.As(e, &fe) && fe.Key == key {
				found = true
			}
		}
		require.True(t, found, "%s is reported in %v", key, err)
	}
	_, err = json.New(o, parsers.Settings{})
	require.Error(t, err)
	require.NoError(t, (&json.Options{JSONTimeKey: "t", JSONTimeFormat: "unix", JSONTimezone: "Local"}).Validate())
}

// TestInvalidUTF8 replaces each byte that is not UTF-8 with U+FFFD, as Telegraf's decoder
// does.
func TestInvalidUTF8(t *testing.T) {
	p := newParser(t, `json_string_fields = ["*"]`)
	got := run(p, []byte("{\"k\xff\": \"caf\xe9!\", \"v\": 1}"))
	require.Equal(t, "file k\ufffd=\"caf\ufffd!\",v=1 1704164645000000000\n", got)
}

// TestPositions places a refused entry at its line and column in the payload, through
// json_query and leading white space too.
func TestPositions(t *testing.T) {
	p := newParser(t, "json_query = \"list\"\njson_time_key = \"t\"\njson_time_format = \"unix\"\njson_strict = false")
	var ms []morse.Metric
	err := p.Parse([]byte("\n{\"list\": [\n  {\"v\": 1, \"t\": 1},\n  {\"v\": 2}\n]}"), func(m morse.Metric) { ms = append(ms, m) })
	require.Len(t, ms, 1)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 1, pe.Refused)
	require.Equal(t, 4, pe.Entries[0].Line)
	require.Equal(t, 3, pe.Entries[0].Column)
	require.ErrorIs(t, pe.Entries[0].Err, json.ErrNoTimeKey)
}

// TestReuse parses twice with one parser: nothing of the first payload leaks into the
// second.
func TestReuse(t *testing.T) {
	p := newParser(t, `tag_keys = ["h"]`)
	require.Equal(t, "file,h=a v=1 1704164645000000000\n", run(p, []byte(`{"h":"a","v":1}`)))
	require.Equal(t, "file w=2 1704164645000000000\n", run(p, []byte(`{"w":2}`)))
}

// TestKeyGlobs matches tag_keys as Telegraf's globs do: stars anywhere, ? and classes; a
// tag key wins over json_string_fields.
func TestKeyGlobs(t *testing.T) {
	p := newParser(t, `tag_keys = ["a*b*c", "x?", "[mn]1"]`+"\n"+`json_string_fields = ["s*"]`)
	require.Equal(t, "file,abxbc=1,m1=3,xy=2 ac=9,xyz=8,o1=7,s=\"v\" 1704164645000000000\n",
		run(p, []byte(`{"abxbc": 1, "ac": 9, "xy": 2, "xyz": 8, "m1": 3, "o1": 7, "s": "v"}`)))
	p = newParser(t, `tag_keys = ["[as]"]`+"\n"+`json_string_fields = ["s*"]`)
	require.Equal(t, "file,a=1,s=v v=2 1704164645000000000\n", run(p, []byte(`{"a": 1, "s": "v", "v": 2}`)))
}
