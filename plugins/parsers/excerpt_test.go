package parsers_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/csv"
	"github.com/morse-agent/morse/plugins/parsers/graphite"
	"github.com/morse-agent/morse/plugins/parsers/grok"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
	"github.com/morse-agent/morse/plugins/parsers/value"
)

func TestExcerpt(t *testing.T) {
	require.Equal(t, "short", parsers.Excerpt("short"))
	exact := strings.Repeat("a", parsers.MaxText)
	require.Equal(t, exact, parsers.Excerpt([]byte(exact)))
	require.Equal(t, exact+"...", parsers.Excerpt(exact+"b"))
	// "é" takes bytes 99 and 100: the cut falls before it, not inside.
	straddle := strings.Repeat("a", parsers.MaxText-1) + "é and more"
	require.Equal(t, straddle[:parsers.MaxText-1]+"...", parsers.Excerpt(straddle))
	require.Equal(t, parsers.Excerpt(straddle), parsers.Excerpt([]byte(straddle)))
}

// TestRefusedTextIsAnExcerpt: every format quotes a long refused line the same way, valid
// UTF-8 cut before a character that straddles the limit, and "..." (prometheus, graphite
// and csv cut inside the character, csv without the dots, grok and json with "…").
func TestRefusedTextIsAnExcerpt(t *testing.T) {
	long := strings.Repeat("x", parsers.MaxText-1) + "é"
	must := func(p parsers.Parser, err error) parsers.Parser {
		require.NoError(t, err)
		return p
	}
	cases := []struct {
		name  string
		p     parsers.Parser
		input string
	}{
		{"prometheus", must(prometheus.New(prometheus.Options{}, parsers.Settings{})), long + " notanumber\n"},
		{"graphite", must(graphite.New(graphite.Options{}, parsers.Settings{})), long + " 1 2 3\n"},
		{"csv", must(csv.New(csv.Options{ColumnNames: []string{"a"}, ColumnTypes: []string{"int"}}, parsers.Settings{})), long + "\n"},
		{"grok", must(grok.New(grok.Options{GrokPatterns: []string{"%{NUMBER:n:int}"}}, parsers.Settings{})), long + "\n"},
		{"value", must(value.New(value.Options{DataType: "integer"}, parsers.Settings{})), long},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Parse([]byte(tc.input), func(morse.Metric) {})
			perr, ok := errors.AsType[*parsers.Error](err)
			require.True(t, ok, "%v", err)
			require.Len(t, perr.Entries, 1)
			text := perr.Entries[0].Text
			require.True(t, utf8.ValidString(text), "%q", text)
			require.Equal(t, parsers.Excerpt(long), text)
		})
	}
}
