package envsubst

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
)

func testEnv(name string) (string, bool) {
	env := map[string]string{
		"HOST":    "db1",
		"PORT":    "8086",
		"EMPTY":   "",
		"QUOTE":   `pa"ss\word`,
		"NEWLINE": "a\nb",
		"APOS":    "it's",
		"TAGS":    `["a", "b"]`,
		"CTRL":    "x\x01y",
	}
	v, ok := env[name]
	return v, ok
}

// expandTests run against testEnv.
var expandTests = []struct {
	name     string
	in       string
	want     string
	problems []Problem
}{
	{name: "plain text", in: "a = 1\n", want: "a = 1\n"},
	{name: "bare value", in: "port = ${PORT}", want: "port = 8086"},
	{name: "in basic string", in: `url = "http://${HOST}:${PORT}"`, want: `url = "http://db1:8086"`},
	{name: "unset is empty", in: `x = "${NOPE}"`, want: `x = ""`},
	{name: "default when unset", in: `x = "${NOPE:-fallback}"`, want: `x = "fallback"`},
	{name: "default when empty", in: `x = "${EMPTY:-fallback}"`, want: `x = "fallback"`},
	{name: "default not used when set", in: `x = "${HOST:-fallback}"`, want: `x = "db1"`},
	{name: "default with colon", in: `x = "${NOPE:-http://a:1}"`, want: `x = "http://a:1"`},
	{name: "empty default", in: `x = "${NOPE:-}"`, want: `x = ""`},
	{name: "required and set", in: `x = "${HOST:?need a host}"`, want: `x = "db1"`},
	{
		name: "required and unset", in: "a = 1\nx = \"${NOPE:?set NOPE to the server}\"\n",
		want: "a = 1\nx = \"\"\n", problems: []Problem{{Line: 2, Var: "NOPE", Msg: "set NOPE to the server"}},
	},
	{
		name: "required and empty without message", in: `x = "${EMPTY:?}"`, want: `x = ""`,
		problems: []Problem{{Line: 1, Var: "EMPTY", Msg: "required environment variable is unset or empty"}},
	},
	{name: "dollar dollar", in: `x = "a$$b"`, want: `x = "a$b"`},
	{name: "dollar dollar brace", in: `x = "$${HOST}"`, want: `x = "${HOST}"`},
	{name: "lone dollar kept", in: `x = "pa$s $HOST $"`, want: `x = "pa$s $HOST $"`},
	{name: "a regex group is no variable", in: `r = "${1}xx ${12} ${HOST}"`, want: `r = "${1}xx ${12} db1"`},
	{name: "comment untouched", in: "# ${NOPE:?x} $$\nx = 1 # ${NOPE:?y}", want: "# ${NOPE:?x} $$\nx = 1 # ${NOPE:?y}"},
	{name: "hash in string is not a comment", in: `x = "#${HOST}"`, want: `x = "#db1"`},
	{name: "quote and backslash escaped", in: `x = "${QUOTE}"`, want: `x = "pa\"ss\\word"`},
	{name: "newline escaped in basic string", in: `x = "${NEWLINE}"`, want: `x = "a\nb"`},
	{name: "control escaped", in: `x = "${CTRL}"`, want: `x = "x\u0001y"`},
	{name: "escaped quote keeps string open", in: `x = "\"${QUOTE}"`, want: `x = "\"pa\"ss\\word"`},
	{name: "multi-line basic", in: "x = \"\"\"\n${QUOTE}\n\"\"\"\ny = ${PORT}", want: "x = \"\"\"\npa\\\"ss\\\\word\n\"\"\"\ny = 8086"},
	{name: "multi-line basic closing run", in: "x = \"\"\"a\"\"\"\"\ny = ${PORT}", want: "x = \"\"\"a\"\"\"\"\ny = 8086"},
	{name: "literal string raw", in: `x = 'C:\${HOST}'`, want: `x = 'C:\db1'`},
	{
		name: "literal string refuses apostrophe", in: `x = '${APOS}'`, want: `x = ''`,
		problems: []Problem{{Line: 1, Var: "APOS", Msg: "the value contains a ' or a line break and cannot stand in a literal '...' string: use a \"...\" string"}},
	},
	{name: "multi-line literal accepts apostrophe", in: "x = '''${APOS}'''", want: "x = '''it's'''"},
	{name: "bare array", in: "tags = ${TAGS}", want: `tags = ["a", "b"]`},
	{
		name: "bare newline refused", in: "a = 1\n\nx = ${NEWLINE}\ny = 2", want: "a = 1\n\nx = \ny = 2",
		problems: []Problem{{Line: 3, Var: "NEWLINE", Msg: "the value contains a line break, which is allowed only inside a quoted string"}},
	},
	{name: "apostrophe inside basic string is content", in: `x = "it's ${HOST}"`, want: `x = "it's db1"`},
	{name: "quote inside literal string is content", in: `x = 'say "${HOST}"'`, want: `x = 'say "db1"'`},
	{
		name: "unterminated", in: "x = \"${HOST\"\ny = ${PORT}", want: "x = \"${HOST\"\ny = 8086",
		problems: []Problem{{Line: 1, Msg: "unterminated ${: close the reference with } on the same line"}},
	},
	{
		name: "bad name", in: `x = "${A-B}"`, want: `x = ""`,
		problems: []Problem{{Line: 1, Msg: "invalid variable name in ${A-B}"}},
	},
	{
		name: "bad operator", in: `x = "${HOST:+y}"`, want: `x = ""`,
		problems: []Problem{{Line: 1, Var: "HOST", Msg: "invalid reference ${HOST:+y}: use ${VAR}, ${VAR:-default} or ${VAR:?message}"}},
	},
	{
		name: "several problems", in: "a = \"${A:?a}\"\nb = \"${B:?b}\"\n",
		want:     "a = \"\"\nb = \"\"\n",
		problems: []Problem{{Line: 1, Var: "A", Msg: "a"}, {Line: 2, Var: "B", Msg: "b"}},
	},
}

func TestExpand(t *testing.T) {
	for _, tt := range expandTests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := Expand(tt.in, testEnv)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.problems, problems)
			require.Equal(t, strings.Count(tt.in, "\n"), strings.Count(got, "\n"), "line structure must be preserved")
		})
	}
}

// TestExpandInjection checks that hostile values decode to exactly themselves and never add
// keys to the document.
func TestExpandInjection(t *testing.T) {
	values := []string{
		`x" evil = "y`,
		`\`,
		`a\"b`,
		"line1\nline2\r\n",
		`"""`,
		"tab\there",
	}
	for _, v := range values {
		lookup := func(string) (string, bool) { return v, true }
		for _, tmpl := range []string{`s = "${V}"`, "s = \"\"\"${V}\"\"\""} {
			got, problems := Expand(tmpl, lookup)
			require.Empty(t, problems)
			var doc map[string]any
			_, err := toml.Decode(got, &doc)
			require.NoError(t, err, "value %q in %s", v, tmpl)
			require.Equal(t, map[string]any{"s": v}, doc)
		}
	}
}
