package influx

import (
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// stringEscapeCases are string field values as written in line protocol and the string that
// InfluxDB 1.6.7 stores for them (models.unescapeStringField: only `\"` and `\\` are
// escapes), which Telegraf 1.39.3's default parser reads too. The integration test of the
// influxdb_listener checks the same cases against the real server.
var stringEscapeCases = []struct{ raw, want string }{
	{`a\nb`, "a\\nb"},
	{`a\tb`, "a\\tb"},
	{`a\rb`, "a\\rb"},
	{`a\\b`, `a\b`},
	{`a\"b`, `a"b`},
	{`a\xb`, `a\xb`},
	{`a\\nb`, "a\\nb"},    // an escaped backslash, then n
	{`a\\\nb`, "a\\\\nb"}, // an escaped backslash, then `\n`
	{`\n\t\r`, "\\n\\t\\r"},
	{`end\\`, `end\`},
	{`a` + "\n" + `b\n`, "a\nb\\n"}, // a real newline, then `\n`
	{`tab` + "\t" + `\t`, "tab\t\\t"},
}

// TestStringEscapesAreInfluxDBs checks every path of the parser: the fast path, the reference
// path (the v2 decoder, which alone would read `\n` as a newline), streams cut anywhere, and
// a long entry that a small stream buffer must shift.
func TestStringEscapesAreInfluxDBs(t *testing.T) {
	for _, tc := range stringEscapeCases {
		t.Run(tc.raw, func(t *testing.T) {
			data := []byte(`m s="` + tc.raw + `",v=1 5` + "\n")
			want := fuzzPoint{Name: "m", Fields: []morse.Field{{Key: "s", Value: morse.String(tc.want)}, {Key: "v", Value: morse.Float(1)}}, Time: 5}
			for _, reference := range []bool{false, true} {
				got, res := parseWith(data, reference)
				require.Zero(t, res.Errors, "reference %v: %v", reference, res.Err())
				require.Equal(t, []fuzzPoint{want}, got.Points, "reference %v", reference)
			}
			for _, chunk := range []int{1, 3, 7} {
				require.Equal(t, []fuzzPoint{want}, streamWith(t, data, chunk).Points, "chunks of %d", chunk)
			}
			long := []byte(`m,pad=` + strings.Repeat("p", 300) + ` s="` + tc.raw + `",v=1 5` + "\n")
			var streamed []fuzzPoint
			p := &Parser{Now: func() time.Time { return fuzzNow }}
			require.NoError(t, p.ParseReader(iotest.OneByteReader(strings.NewReader(string(long))),
				func(m morse.Metric) { streamed = append(streamed, pointOf(m)) }, nil))
			require.Len(t, streamed, 1)
			require.Equal(t, want.Fields, streamed[0].Fields)
		})
	}
}

// TestStringEscapesKeepErrorsOwnText: a refused entry with `\n` in a string is reported with
// its own text and the reason it would have without the escape.
func TestStringEscapesKeepErrorsOwnText(t *testing.T) {
	for _, reference := range []bool{false, true} {
		_, res := parseWith([]byte(`m s="a\nb\tc",v=1.5i 5`+"\n"+`m s="x",v=1.5i 5`+"\n"), reference)
		require.Equal(t, 2, res.Errors)
		require.Equal(t, `unable to parse 'm s="a\nb\tc",v=1.5i 5': invalid number`, res.Errs[0].Error())
		require.Equal(t, `unable to parse 'm s="x",v=1.5i 5': invalid number`, res.Errs[1].Error())
	}
}
