package grok_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/grok"
)

// The parser reads the lines that tail hands it one by one.
var _ parsers.LineParser = (*grok.Parser)(nil)

// TestValidateReportsEveryProblem: one run names each problem under its option, as the
// loader shows them, including those Telegraf finds only when a line arrives (an
// expression Go's regexp refuses) or never (an unknown modifier).
func TestValidateReportsEveryProblem(t *testing.T) {
	o := grok.Options{
		GrokPatterns: []string{"%{TEST_LOG_B}", "%{LOOKAHEAD:x}", "%{TWO_TIMES}", "%{NUMBER:n:integer}"},
		GrokCustomPatterns: `
			LOOKAHEAD ((?!bot|crawl).)*
			TWO_TIMES %{HTTPDATE:ts1:ts-httpd} %{HTTPDATE:ts2:ts-httpd} %{NUMBER:mynum:int}
			NODEFINITION
			LOOP %{LOOP2}
			LOOP2 %{LOOP}
		`,
		GrokCustomPatternFiles: []string{"/nonexistent/patterns"},
		GrokTimezone:           "Something/Weird",
		GrokUniqueTimestamp:    "off",
	}
	err := o.Validate()
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`grok_timezone: unknown time zone "Something/Weird"`,
		`grok_unique_timestamp: must be "auto" or "disable", got "off"`,
		`grok_custom_patterns: pattern NODEFINITION has no definition`,
		`grok_custom_pattern_files: open /nonexistent/patterns: no such file or directory`,
		`grok_custom_patterns: pattern TWO_TIMES: a pattern may have one timestamp modifier`,
		`grok_custom_patterns: pattern LOOP: pattern LOOP refers to itself`,
		`grok_patterns: "%{NUMBER:n:integer}": unknown modifier "integer"`,
	} {
		require.Contains(t, msg, want)
	}
	require.Contains(t, msg, `grok_patterns: "%{TEST_LOG_B}": no pattern found for %{TEST_LOG_B}`)
	require.Contains(t, msg, `grok_patterns: "%{LOOKAHEAD:x}": error parsing regexp: invalid or unsupported Perl syntax: `+"`(?!`")
	var fe *morse.FieldError
	require.ErrorAs(t, err, &fe)

	_, err = grok.New(o, parsers.Settings{})
	require.Error(t, err, "New refuses what Validate refuses")
	require.Error(t, (&grok.Options{GrokPatterns: []string{" ", ""}}).Validate(), "only empty patterns")
	require.NoError(t, (&grok.Options{}).Validate(), "the defaults")
}

// TestBuiltinPatternsCompile: every built-in pattern, Telegraf's and the base set, is a
// valid grok pattern and a valid expression.
func TestBuiltinPatternsCompile(t *testing.T) {
	for _, file := range []string{"patterns/base", "patterns/telegraf"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		names := grok.Names(string(data))
		require.NotEmpty(t, names)
		for _, name := range names {
			_, err := grok.New(grok.Options{GrokPatterns: []string{"%{" + name + ":x}"}}, parsers.Settings{})
			require.NoError(t, err, name)
		}
	}
}

// TestTimezoneLocal: "Local" is the machine's zone, for a timestamp without an offset.
func TestTimezoneLocal(t *testing.T) {
	p := newParser(t, `
grok_patterns = ["%{TEST_LOG_A}", "%{TEST_LOG_B}"]
grok_custom_pattern_files = ["testdata/test-patterns"]
grok_timezone = "Local"`)
	data, err := os.ReadFile("testdata/test_b.log")
	require.NoError(t, err)
	var got []morse.Metric
	require.NoError(t, p.Parse(data, func(m morse.Metric) { got = append(got, m) }))
	require.Len(t, got, 1)
	require.Equal(t, time.Date(2016, time.June, 4, 12, 41, 45, 0, time.Local).UnixNano(), got[0].Time().UnixNano())
}

// TestRefusedLinesKeepTheRest: a line that matches no pattern is counted and placed, the
// lines around it are read; CRLF endings and empty lines are no entries of their own.
func TestRefusedLinesKeepTheRest(t *testing.T) {
	p := newParser(t, `grok_patterns = ["%{WORD:w:tag} %{NUMBER:v:int}"]`)
	got := parse(t, p, "a 1\r\n\nnot a number\nb 2\n\r\n---\nc 3")
	require.Equal(t, "grok,w=a v=1i 1491004800000000000\n"+
		"grok,w=b v=2i 1491004800001000000\n"+
		"grok,w=c v=3i 1491004800002000000\n"+
		"# refused line 3: matches no grok pattern: \"not a number\"\n"+
		"# refused line 6: matches no grok pattern: \"---\"\n"+
		"# 2 refused\n", got)

	var perr *parsers.Error
	err := p.Parse([]byte("x\n"), func(morse.Metric) {})
	require.True(t, errors.As(err, &perr))
	require.ErrorIs(t, perr.Entries[0].Err, grok.ErrNoMatch)
	require.Equal(t, 1, parsers.Refused(err))
}

// TestPatternsInOrder: the first pattern that matches reads the line; one without a
// capture name reads nothing, so the next is tried, as in Telegraf.
func TestPatternsInOrder(t *testing.T) {
	p := newParser(t, `
grok_unique_timestamp = "disable"
grok_patterns = ["%{NUMBER} %{WORD}", "%{NUMBER:n:int} %{WORD:first}", "%{NUMBER:n:int} %{WORD:second}"]`)
	require.Equal(t, "grok n=5i,first=\"x\" 1491004800000000000\n", parse(t, p, "5 x"))
}

// TestRepeatedCaptureNameLastWins: where a name repeats, the value is the last group's,
// even when that group took no part in the match (then there is no value), as Telegraf's
// grok library reads it.
func TestRepeatedCaptureNameLastWins(t *testing.T) {
	p := newParser(t, `grok_patterns = ["^(?:%{NUMBER:v}|%{WORD:v}) %{WORD:w}"]`)
	require.Equal(t, "grok v=\"abc\",w=\"x\" 1491004800000000000\n"+
		"grok w=\"y\" 1491004800001000000\n", parse(t, p, "abc x\n12 y"))
}

// TestModifiersInheritAtAnyDepth: modifiers reach the pattern that names a custom pattern
// without a capture name through any number of levels, the same every run.
func TestModifiersInheritAtAnyDepth(t *testing.T) {
	p := newParser(t, `
grok_patterns = ["%{L1}"]
grok_custom_patterns = '''
L1 %{L2}
L2 %{L3}
L3 %{L4}
L4 %{NUMBER:n:int} %{WORD:t:tag} %{NUMBER:f:float}
'''`)
	require.Equal(t, "grok,t=x n=7i,f=1.5 1491004800000000000\n", parse(t, p, "7 x 1.5"))
}

// TestCustomPatternReplacesBuiltin: a custom pattern of a built-in name replaces it, in
// the patterns that name it too; a file's definition replaces grok_custom_patterns'.
func TestCustomPatternReplacesBuiltin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "patterns")
	require.NoError(t, os.WriteFile(file, []byte("# comment\nWORD [a-c]+\n"), 0o644))
	p := newParser(t, `
grok_patterns = ["^%{NUMBER:n:int} %{WORD:w}"]
grok_custom_patterns = "BASE10NUM [0-9]"
grok_custom_pattern_files = ["`+file+`"]`)
	require.Equal(t, "grok n=1i,w=\"abc\" 1491004800000000000\n"+
		"# refused line 2: matches no grok pattern: \"12 abc\"\n"+
		"# refused line 3: matches no grok pattern: \"1 xyz\"\n"+
		"# 2 refused\n", parse(t, p, "1 abc\n12 abc\n1 xyz"))
}

// TestCaptureNamesWithDots: a capture name may have '.' and '-', which Go's group names
// cannot; the field keeps its name. Such a capture takes no modifier, as in Telegraf,
// whose modifiers are read only after a name of word characters.
func TestCaptureNamesWithDots(t *testing.T) {
	p := newParser(t, `grok_patterns = ["%{NUMBER:a.b} %{WORD:c-d}"]`)
	require.Equal(t, "grok a.b=\"1\",c-d=\"x\" 1491004800000000000\n", parse(t, p, "1 x"))
	err := (&grok.Options{GrokPatterns: []string{"%{WORD:c-d:tag}"}}).Validate()
	require.ErrorContains(t, err, "invalid pattern %{WORD:c-d:tag}")
}

// TestUniqueTimestampAcrossCalls: the previous timestamp is kept from one call to the
// next, as tail calls ParseLine for each line; "disable" keeps timestamps as read.
func TestUniqueTimestampAcrossCalls(t *testing.T) {
	const pattern = `grok_patterns = ["%{NUMBER:ts:ts-epoch} %{NUMBER:v:int}"]`
	for _, tc := range []struct {
		config string
		want   []int64
	}{
		{pattern, []int64{5e9, 5e9 + 1e6, 5e9 + 2e6, 6e9}},
		{pattern + "\ngrok_unique_timestamp = \"disable\"", []int64{5e9, 5e9, 5e9, 6e9}},
	} {
		p := newParser(t, tc.config)
		var got []int64
		for _, line := range []string{"5 1", "5 2", "5 3", "6 4"} {
			require.NoError(t, p.ParseLine([]byte(line), func(m morse.Metric) { got = append(got, m.Time().UnixNano()) }))
		}
		require.Equal(t, tc.want, got, tc.config)
	}
}

// TestMultilineParseLine: with grok_multiline, the lines that tail's multiline option
// joined are one entry.
func TestMultilineParseLine(t *testing.T) {
	p := newParser(t, `
grok_patterns = ['%{WORD:level} %{MULTILINEDATA:text}']
grok_multiline = true`)
	var got []morse.Metric
	require.NoError(t, p.ParseLine([]byte("ERROR first\n  second"), func(m morse.Metric) { got = append(got, m) }))
	require.Len(t, got, 1)
	text, _ := got[0].Field("text")
	require.Equal(t, morse.String("first\n  second"), text)
}

// TestGenericTimestampLayouts: "ts" reads each layout it knows, whichever came before.
func TestGenericTimestampLayouts(t *testing.T) {
	p := newParser(t, `
grok_unique_timestamp = "disable"
grok_patterns = ['^%{DATA:t:ts}\|%{NUMBER:v:int}$']`)
	want := time.Date(2016, time.June, 9, 3, 37, 3, 0, time.UTC)
	for _, layout := range []string{time.ANSIC, time.RubyDate, time.RFC822Z, time.RFC1123Z, time.RFC3339, time.RFC3339Nano, "02/Jan/2006:15:04:05 -0700"} {
		var got []morse.Metric
		require.NoError(t, p.Parse([]byte(want.Format(layout)+"|1"), func(m morse.Metric) { got = append(got, m) }))
		require.Len(t, got, 1)
		require.Equal(t, want.Truncate(time.Minute).Unix()/60, got[0].Time().Unix()/60, layout)
	}
}
