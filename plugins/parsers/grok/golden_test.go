package grok_test

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
	"github.com/morse-agent/morse/plugins/parsers/grok"
)

// now is the time of lines without a timestamp, and gives the year of timestamps without
// one; Telegraf's syslog test uses it.
var now = time.Date(2017, time.April, 1, 0, 0, 0, 0, time.UTC)

// newParser decodes config, Telegraf's keys only, and builds the parser as an input would.
func newParser(t testing.TB, config string) *grok.Parser {
	t.Helper()
	var o grok.Options
	md, err := toml.Decode(config, &o)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys the parser does not take")
	p, err := grok.New(o, parsers.Settings{MetricName: "grok", Now: func() time.Time { return now }})
	require.NoError(t, err)
	return p
}

// parse runs p over data and writes what it emitted as line protocol, then each refused
// line as a comment.
func parse(t testing.TB, p *grok.Parser, data string) string {
	t.Helper()
	var ms []morse.Metric
	err := p.Parse([]byte(data), func(m morse.Metric) { ms = append(ms, m) })
	out := testutil.Format(ms)
	var perr *parsers.Error
	if err != nil {
		require.True(t, errors.As(err, &perr), "%v", err)
		for _, e := range perr.Entries {
			out += "# refused " + e.Error() + "\n"
		}
		out += fmt.Sprintf("# %d refused\n", perr.Refused)
	}
	return out
}

// TestGolden runs the cases of testdata/cases, Telegraf 1.39.3's grok tests and README
// examples: the options, the input (its last newline left out, so that a multiline case
// reads the bytes of Telegraf's file) and what morse makes of it.
func TestGolden(t *testing.T) {
	for _, c := range testutil.Cases(t, "testdata/cases") {
		t.Run(c.Name, func(t *testing.T) {
			p := newParser(t, c.Config)
			c.Check(t, parse(t, p, strings.TrimSuffix(c.In, "\n")))
		})
	}
}
