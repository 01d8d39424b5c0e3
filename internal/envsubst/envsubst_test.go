package envsubst

import (
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
)

var env = map[string]string{
	"HOST":      "db1",
	"PORT":      "8086",
	"EMPTY":     "",
	"ENV_EMPTY": "",
	"QUOTE":     `pa"ss\word`,
	"NEWLINE":   "a\nb",
	"APOS":      "it's",
	"TAGS":      `["a", "b"]`,
	"CTRL":      "x\x01y",
	// Telegraf's own test environment (config/internal_test.go).
	"VAR":       "foobar",
	"FALLBACK":  "default",
	"TEST_ENV1": "VALUE1",
	"TEST_ENV2": "VALUE2",
	"MY_ENV1":   "VALUE1",
	"MY_VAR":    "VALUE",
	"MY_VAR2":   "VALUE2",
}

func testEnv(name string) (string, bool) {
	v, ok := env[name]
	return v, ok
}

func unset(name, as string) Problem {
	return Problem{Line: 1, Var: name, Warning: true,
		Msg: "environment variable " + name + " is not set: " + as + " is kept as written, as Telegraf keeps it"}
}

func emptied(name string) Problem {
	return Problem{Line: 1, Var: name, Warning: true,
		Msg: "environment variable " + name + " is not set: it is replaced by nothing, as Telegraf replaces it there"}
}

// telegrafCases are the substitution cases of Telegraf 1.39.3's config/internal_test.go
// (TestEnvironmentSubstitution and TestEnvironmentSubstitutionNewBehavior), with their
// expected results, and further cases of its pattern's rules. Each is a string's content:
// Telegraf substitutes in string values of the parsed document.
var telegrafCases = []struct {
	name, in, want string
	problems       []Problem
}{
	{name: "braced and bare", in: "A string with ${TEST_ENV1}, $TEST_ENV2 and $TEST_ENV1 as repeated",
		want: "A string with VALUE1, VALUE2 and VALUE1 as repeated"},
	{name: "braced not set", in: "Env variable ${NOT_SET} will be empty", want: "Env variable ${NOT_SET} will be empty",
		problems: []Problem{unset("NOT_SET", "${NOT_SET}")}},
	{name: "fallback when absent", in: "Env variable ${THIS_IS_ABSENT:-Fallback}", want: "Env variable Fallback"},
	{name: "no fallback", in: "Env variable ${MY_ENV1:-Fallback}", want: "Env variable VALUE1"},
	{name: "mix and match",
		in:   "Env var ${MY_VAR} is set, with $MY_VAR syntax and default on this ${MY_VAR1:-Substituted}, no default on this ${MY_VAR2:-NoDefault}",
		want: "Env var VALUE is set, with VALUE syntax and default on this Substituted, no default on this VALUE2"},
	{name: "empty but set", in: "Contains ${EMPTY} nothing", want: "Contains  nothing"},
	{name: "default has special chars", in: `Not recommended but supported ${MY_VAR1:-Default with special chars Supported#$\"}`,
		want: `Not recommended but supported Default with special chars Supported#$\"`},
	{name: "unset error", in: "Contains ${THIS_IS_NOT_SET?unset-error}", want: "Contains ",
		problems: []Problem{{Line: 1, Var: "THIS_IS_NOT_SET", Msg: "unset-error"}}},
	{name: "env empty error", in: "Contains ${ENV_EMPTY:?empty-error}", want: "Contains ",
		problems: []Problem{{Line: 1, Var: "ENV_EMPTY", Msg: "empty-error"}}},
	{name: "fallback as env variable", in: "Should output ${NOT_SET:-${FALLBACK}}", want: "Should output default"},
	{name: "not defined no brackets", in: `my-da$tabase`, want: `my-da$tabase`, problems: []Problem{unset("tabase", "$tabase")}},
	{name: "not defined brackets", in: `my-da${ta}base`, want: `my-da${ta}base`, problems: []Problem{unset("ta", "${ta}")}},
	{name: "not defined double dollar", in: `my-da$$tabase`, want: `my-da$tabase`},
	{name: "not defined backslash", in: `my-da\$tabase`, want: `my-da\$tabase`, problems: []Problem{unset("tabase", "$tabase")}},
	{name: "not defined brackets backslash", in: `my-da\${ta}base`, want: `my-da\${ta}base`, problems: []Problem{unset("ta", "${ta}")}},
	{name: "no brackets and suffix", in: `my-da$VARbase`, want: `my-da$VARbase`, problems: []Problem{unset("VARbase", "$VARbase")}},
	{name: "no brackets", in: `my-da$VAR`, want: `my-dafoobar`},
	{name: "brackets", in: `my-da${VAR}base`, want: `my-dafoobarbase`},
	{name: "no brackets double dollar", in: `my-da$$VAR`, want: `my-da$VAR`},
	{name: "brackets double dollar", in: `my-da$${VAR}`, want: `my-da${VAR}`},
	{name: "no brackets backslash", in: `my-da\$VAR`, want: `my-da\foobar`},
	{name: "brackets backslash", in: `my-da\${VAR}base`, want: `my-da\foobarbase`},
	{name: "fallback", in: `my-da${ta:-omg}base`, want: `my-daomgbase`},
	{name: "fallback env", in: `my-da${ta:-${FALLBACK}}base`, want: `my-dadefaultbase`},
	{name: "regex substitution", in: `${1}`, want: `${1}`},
	// Which characters end a bare name: anything but a letter, a digit or _.
	{name: "dot ends a name", in: `$HOST.example.com`, want: `db1.example.com`},
	{name: "colon ends a name", in: `http://$HOST:$PORT/write`, want: `http://db1:8086/write`},
	{name: "dash ends a name", in: `$HOST-replica`, want: `db1-replica`},
	{name: "underscore continues a name", in: `$HOST_1`, want: `$HOST_1`, problems: []Problem{unset("HOST_1", "$HOST_1")}},
	{name: "lower case names", in: `$Var $VAR`, want: `$Var foobar`, problems: []Problem{unset("Var", "$Var")}},
	{name: "a digit starts no name", in: `$1 and $ alone $`, want: `$1 and $ alone $`},
	{name: "unterminated brace kept", in: `${HOST and $HOST`, want: `${HOST and db1`},
	{name: "unknown operator kept", in: `${HOST:x}`, want: `${HOST:x}`},
	{name: "empty braces kept", in: `${}`, want: `${}`},
	// The operators Telegraf's library knows besides :- and :?.
	{name: "dash default only when unset", in: `${EMPTY-d}|${NOPE-d}`, want: `|d`},
	{name: "question only when unset", in: `${EMPTY?must be set}`, want: ``},
	{name: "colon plus when not empty", in: `${HOST:+on}|${EMPTY:+on}|${NOPE:+on}`, want: `on||`},
	{name: "plus when set", in: `${EMPTY+on}|${NOPE+on}`, want: `on|`},
	// After a reference with an operator, Telegraf substitutes up to the line's last } by
	// its library's rule, which empties an unset variable.
	{name: "after an operator unset is empty", in: `${NOPE:-x} $C ${HOST} $D`, want: `x  db1 $D`,
		problems: []Problem{emptied("C"), unset("D", "$D")}},
	{name: "after an operator a bad brace keeps all", in: `${NOPE:-x} ${1}`, want: `${NOPE:-x} ${1}`},
	{name: "required inside a default", in: `${NOPE:-${ALSO_NOPE:?need it}}`, want: ``,
		problems: []Problem{{Line: 1, Var: "ALSO_NOPE", Msg: "need it"}}},
}

// TestExpandTelegrafCases runs each case in a literal string, which has no escapes, so the
// text is the value Telegraf substitutes in.
func TestExpandTelegrafCases(t *testing.T) {
	for _, tt := range telegrafCases {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := Expand("x = '"+tt.in+"'", testEnv)
			require.Equal(t, "x = '"+tt.want+"'", got)
			require.Equal(t, tt.problems, withoutKeys(problems))
		})
	}
}

// expandTests are cases of where references are replaced and how values are written.
var expandTests = []struct {
	name     string
	in       string
	want     string
	problems []Problem
}{
	{name: "plain text", in: "a = 1\n", want: "a = 1\n"},
	{name: "bare value", in: "port = ${PORT}", want: "port = 8086"},
	{name: "bare value without braces", in: "port = $PORT", want: "port = 8086"},
	{name: "in basic string", in: `url = "http://${HOST}:$PORT"`, want: `url = "http://db1:8086"`},
	{name: "in array", in: `urls = ["http://$HOST:8086", '$PORT', ${PORT}]`, want: `urls = ["http://db1:8086", '8086', 8086]`},
	{name: "in multi-line array", in: "urls = [\n  \"$HOST\",\n  \"$PORT\",\n]", want: "urls = [\n  \"db1\",\n  \"8086\",\n]"},
	{name: "in inline table", in: `tags = {host = "$HOST", port = $PORT}`, want: `tags = {host = "db1", port = 8086}`},
	{name: "quoted key untouched", in: `"$HOST" = "$HOST"`, want: `"$HOST" = "db1"`},
	{name: "literal key untouched", in: `'${HOST}' = '${HOST}'`, want: `'${HOST}' = 'db1'`},
	{name: "dotted quoted key untouched", in: `a."$HOST".b = "$HOST"`, want: `a."$HOST".b = "db1"`},
	{name: "header untouched", in: "[inputs.\"$HOST\"]\nx = \"$HOST\"", want: "[inputs.\"$HOST\"]\nx = \"db1\""},
	{name: "bare key untouched", in: "${HOST} = 1", want: "${HOST} = 1"},
	{name: "inline table keys untouched", in: `t = {"$HOST" = "$HOST", "$PORT" = 1}`, want: `t = {"$HOST" = "db1", "$PORT" = 1}`},
	{name: "key after a multi-line array", in: "a = [\n 1,\n]\n\"$HOST\" = \"$HOST\"", want: "a = [\n 1,\n]\n\"$HOST\" = \"db1\""},
	{name: "comment untouched", in: "# ${NOPE:?x} $HOST $$\nx = 1 # ${NOPE:?y} $HOST", want: "# ${NOPE:?x} $HOST $$\nx = 1 # ${NOPE:?y} $HOST"},
	{name: "comment inside a multi-line array", in: "a = [\n  # $HOST\n  \"$HOST\",\n]", want: "a = [\n  # $HOST\n  \"db1\",\n]"},
	{name: "hash in string is not a comment", in: `x = "#$HOST"`, want: `x = "#db1"`},
	{name: "default with colon", in: `x = "${NOPE:-http://a:1}"`, want: `x = "http://a:1"`},
	{name: "default keeps its escapes", in: `x = "${NOPE:-a\"b}"`, want: `x = "a\"b"`},
	{name: "quote and backslash escaped", in: `x = "$QUOTE"`, want: `x = "pa\"ss\\word"`},
	{name: "newline escaped in basic string", in: `x = "${NEWLINE}"`, want: `x = "a\nb"`},
	{name: "control escaped", in: `x = "${CTRL}"`, want: `x = "x\u0001y"`},
	{name: "escaped quote keeps string open", in: `x = "\"$QUOTE"`, want: `x = "\"pa\"ss\\word"`},
	{name: "escaped dollar is no reference", in: `x = "\$HOST"`, want: `x = "\$HOST"`},
	{name: "string ends the reach of a default", in: `x = "${NOPE:-a" # }`, want: `x = "${NOPE:-a" # }`},
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
	{
		name: "unset warning placed", in: "a = 1\nx = \"$NOPE\"", want: "a = 1\nx = \"$NOPE\"",
		problems: []Problem{{Line: 2, Var: "NOPE", Warning: true, Msg: "environment variable NOPE is not set: $NOPE is kept as written, as Telegraf keeps it"}},
	},
	{name: "apostrophe inside basic string is content", in: `x = "it's ${HOST}"`, want: `x = "it's db1"`},
	{name: "quote inside literal string is content", in: `x = 'say "${HOST}"'`, want: `x = 'say "db1"'`},
	{
		name: "required and unset", in: "a = 1\nx = \"${NOPE:?set NOPE to the server}\"\n",
		want: "a = 1\nx = \"\"\n", problems: []Problem{{Line: 2, Var: "NOPE", Msg: "set NOPE to the server"}},
	},
	{
		name: "required and empty without message", in: `x = "${EMPTY:?}"`, want: `x = ""`,
		problems: []Problem{{Line: 1, Var: "EMPTY", Msg: "required environment variable is unset or empty"}},
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
			require.Equal(t, tt.problems, withoutKeys(problems))
			require.Equal(t, strings.Count(tt.in, "\n"), strings.Count(got, "\n"), "line structure must be preserved")
		})
	}
}

// withoutKeys clears Problem.Key, which TestExpandNamesTheKey checks.
func withoutKeys(ps []Problem) []Problem {
	for i := range ps {
		ps[i].Key = ""
	}
	return ps
}

// TestExpandNamesTheKey: each problem names the last part of the key whose value holds the
// reference, however the key is written.
func TestExpandNamesTheKey(t *testing.T) {
	in := "[[inputs.diskio]]\n" +
		"  name_templates = [\"$ID_FS_LABEL\",\n  \"${DM_VG_NAME}\"]\n" +
		"  a.\"quoted.key\" = \"$A\"\n" +
		"  t = {inner = \"$B\", 'lit' = \"$C\"}\n"
	_, problems := Expand(in, testEnv)
	var keys []string
	for _, p := range problems {
		keys = append(keys, p.Var+"@"+p.Key)
	}
	require.Equal(t, []string{"ID_FS_LABEL@name_templates", "DM_VG_NAME@name_templates",
		"A@quoted.key", "B@inner", "C@lit"}, keys)
}

// TestExpandTelegrafComments runs Telegraf's envvar_comments.toml shapes: a # inside any
// kind of string is content, and references in comments are never looked at.
func TestExpandTelegrafComments(t *testing.T) {
	in := "[[outputs.influxdb]]\n" +
		"  setting1 = '#$HOST'#test $NOPE\n" +
		"  setting2 = '''#$HOST'''#test ${NOPE:?x}\n" +
		"  setting3 = \"#$HOST\"#test\n" +
		"  setting4 = \"\"\"#$HOST\"\"\"#test\n" +
		"  wicked1 = \"\\\"$HOST\"#test $NOPE\n" +
		"  wicked2 = \"\"\"\\\"\"\"\"#test $NOPE\n" +
		"  mylist = [\n\t\"v $HOST\", # a good $NOPE\n  'v5', \"\"\"tagwith#$HOST\"\"\",\n  ] # Should $NOPE work\n"
	got, problems := Expand(in, testEnv)
	require.Empty(t, problems)
	var doc map[string]any
	_, err := toml.Decode(got, &doc)
	require.NoError(t, err, got)
	out := doc["outputs"].(map[string]any)["influxdb"].([]map[string]any)[0]
	require.Equal(t, map[string]any{
		"setting1": "#db1", "setting2": "#db1", "setting3": "#db1", "setting4": "#db1",
		"wicked1": `"db1`, "wicked2": `"`, "mylist": []any{"v db1", "v5", "tagwith#db1"},
	}, out)
}

// TestExpandInjection checks that hostile values decode to exactly themselves and never add
// keys to the document; Telegraf's envvar_malicious.conf value is one of them.
func TestExpandInjection(t *testing.T) {
	values := []string{
		`x" evil = "y`,
		`\`,
		`a\"b`,
		"line1\nline2\r\n",
		`"""`,
		"tab\there",
		"a pid\"\n\n\t\t\t[[inputs.memcached]]\n\t\t\t  command = \"evil",
		"$HOST ${HOST}",
	}
	for _, v := range values {
		lookup := func(string) (string, bool) { return v, true }
		for _, tmpl := range []string{`s = "${V}"`, "s = \"\"\"${V}\"\"\"", `s = "$V"`} {
			got, problems := Expand(tmpl, lookup)
			require.Empty(t, problems)
			var doc map[string]any
			_, err := toml.Decode(got, &doc)
			require.NoError(t, err, "value %q in %s", v, tmpl)
			require.Equal(t, map[string]any{"s": v}, doc, fmt.Sprintf("value %q in %s", v, tmpl))
		}
	}
}
