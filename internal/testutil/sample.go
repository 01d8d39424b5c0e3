package testutil

import (
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// commonKeys are the options that the engine takes for every processor or aggregator, so a
// plugin's struct does not: a sample may show them.
var commonKeys = map[string]bool{
	"alias": true, "order": true, "namepass": true, "namedrop": true, "tagpass": true, "tagdrop": true,
	"fieldinclude": true, "fieldexclude": true, "fieldpass": true, "fielddrop": true,
	"taginclude": true, "tagexclude": true, "period": true, "delay": true, "grace": true,
	"drop_original": true, "name_override": true, "name_prefix": true, "name_suffix": true,
	"log_level": true,
}

// commentedOption matches a commented-out option or table ("  # key = 1", "# [[a.b]]"),
// not a line of prose ("## text").
var commentedOption = regexp.MustCompile(`(?m)^(\s*)# `)

// CheckSample checks a plugin's embedded sample.conf: it starts with a description and the
// [[kind.name]] header, and it decodes into a fresh plugin and validates twice, as written
// and with every commented-out option uncommented, so that no option the sample shows is
// one the plugin does not take. Options the engine takes for every plugin are let through.
func CheckSample(t *testing.T, kind, name, sample string, newPlugin func() any) {
	t.Helper()
	header := "[[" + kind + "." + name + "]]"
	first, rest, _ := strings.Cut(sample, "\n")
	require.True(t, strings.HasPrefix(first, "# "), "the sample starts with its description")
	before, body, found := strings.Cut(rest, header+"\n")
	require.True(t, found, "the sample has the header %s", header)
	require.Empty(t, strings.TrimSpace(before), "nothing between the description and the header")
	for _, text := range []string{body, commentedOption.ReplaceAllString(body, "$1")} {
		p := newPlugin()
		md, err := toml.Decode(tableHeader.ReplaceAllString(text, "$1"), p)
		require.NoError(t, err, "%s", text)
		for _, k := range md.Undecoded() {
			require.True(t, commonKeys[k[0]], "the plugin does not take %q", k.String())
		}
		if v, ok := p.(morse.Validator); ok {
			require.NoError(t, v.Validate(), "%s", text)
		}
		if i, ok := p.(morse.Initializer); ok {
			require.NoError(t, i.Init(), "%s", text)
		}
	}
}
