package glob

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		patterns []string
		match    []string
		miss     []string
	}{
		{nil, nil, []string{"", "a"}},
		{[]string{"port"}, []string{"port"}, []string{"ports", "Port", ""}},
		{[]string{"scboard_*", "x?z"}, []string{"scboard_", "scboard_open", "xyz"}, []string{"scboard", "xz", "xyyz"}},
		{[]string{"[a-c]*", `a\*`}, []string{"apple", "cat", "a*"}, []string{"dog", ""}},
		{[]string{"*"}, []string{"", "any.thing/at all"}, nil},
	}
	for _, tt := range tests {
		m, err := Compile("key", tt.patterns)
		require.NoError(t, err)
		for _, s := range tt.match {
			require.True(t, m.Match(s), "%v matches %q", tt.patterns, s)
		}
		for _, s := range tt.miss {
			require.False(t, m.Match(s), "%v does not match %q", tt.patterns, s)
		}
	}
}

func TestCompileNamesTheOption(t *testing.T) {
	_, err := Compile("fields.integer", []string{"ok", "bad["})
	var fe *morse.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "fields.integer", fe.Key)
	require.ErrorContains(t, err, `invalid pattern "bad["`)
}
