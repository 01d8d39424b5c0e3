package prometheus_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/prometheus"
)

// TestRefusedLines puts each malformed line between two good ones: the line is refused
// with the message of the decoder Telegraf uses (prometheus/common's expfmt) and its
// position, and the good lines around it are kept, where Telegraf loses the payload.
func TestRefusedLines(t *testing.T) {
	cases := []struct {
		prefix, bad string
		col         int
		msg         string
	}{
		{"", `bad_value abc`, 11, `expected float as value, got "abc"`},
		{"", `hex 0x1p-2`, 5, `expected float as value, got "0x1p-2"`},
		{"", `under 1_000`, 7, `expected float as value, got "1_000"`},
		{"", `no_value`, 9, `expected float as value, got ""`},
		{"", `trailing 1 `, 12, `expected integer as timestamp, got ""`},
		{"", `ts 1 12x`, 6, `expected integer as timestamp, got "12x"`},
		{"", `ts 1 12 extra`, 8, `spurious string after timestamp: " extra"`},
		{"", `m{a="b"`, 8, `unexpected end of label value "b"`},
		{"", `m{a="b"x} 1`, 8, `unexpected end of label value "b"`},
		{"", `m{a="b\q"} 1`, 5, `invalid escape sequence '\q'`},
		{"", `m{a="b",a="c"} 1`, 9, `duplicate label names for metric "m"`},
		{"", `m{__name__="x"} 1`, 3, `label name "__name__" is reserved`},
		{"", `m{a b="c"} 1`, 5, `expected '=' after label name, found 'b'`},
		{"", `m{a:b="c"} 1`, 4, `expected '=' after label name, found ':'`},
		{"", `m{a=b} 1`, 5, `expected '"' at start of label value, found 'b'`},
		{"", `m{a="open} 1`, 5, `label value "open} 1" contains unescaped new-line`},
		{"", `m{"a-b"="c"} 1`, 3, `invalid label name "a-b"`},
		{"", "m{a=\"\xff\"} 1", 5, `invalid label value "\xff"`},
		{"", `m{,} 1`, 3, `invalid label name for metric "m"`},
		{"", `{} 1`, 1, `invalid metric name`},
		{"", `{"a-b"} 1`, 1, `invalid metric name "a-b"`},
		{"", `9m 1`, 1, `invalid metric name`},
		{"", `# TYPE m2 blah`, 11, `unknown metric type "blah"`},
		{"", `# TYPE m2 gauge extra`, 11, `unknown metric type "gauge extra"`},
		{"", `# TYPE before gauge`, 15, `second TYPE line for metric name "before", or TYPE reported after samples`},
		{"# TYPE h gauge\n", `# TYPE h counter`, 10, `second TYPE line for metric name "h", or TYPE reported after samples`},
		{"# HELP h text\n", `# HELP h again`, 10, `second HELP line for metric name "h"`},
		{"", `# HELP h x\y`, 10, `invalid escape sequence '\y'`},
		{"", `# HELP h x\`, 10, `invalid escape sequence at end of line`},
		{"", `# HELP 9h text`, 8, `invalid metric name in comment`},
		{"# TYPE h histogram\n", `h_bucket{le="x"} 1`, 13, `expected float as value for 'le' label, got "x"`},
		{"# TYPE h histogram\n", `h_count -1`, 9, `negative count for histogram "h"`},
		{"# TYPE h histogram\n", `h_bucket{le="1"} -2`, 18, `negative bucket population for histogram "h"`},
		{"# TYPE s summary\n", `s{quantile="high"} 1`, 12, `expected float as value for 'quantile' label, got "high"`},
	}
	for _, tc := range cases {
		t.Run(tc.bad, func(t *testing.T) {
			data := tc.prefix + "before 1\n" + tc.bad + "\nafter 2\n"
			ms, err := parse(t, prometheus.Options{MetricVersion: 2}, []byte(data))
			var perr *parsers.Error
			require.True(t, errors.As(err, &perr), "%v", err)
			require.Equal(t, 1, perr.Refused)
			e := perr.Entries[0]
			line := 2 + countLines(tc.prefix)
			require.Equal(t, line, e.Line)
			require.Equal(t, tc.col, e.Column)
			require.EqualError(t, e.Err, tc.msg)
			require.Equal(t, tc.bad, e.Text)
			require.Equal(t, 1, parsers.Refused(err))
			require.Len(t, ms, 2, "the lines around it are kept")
			require.Equal(t, "before", ms[0].Fields()[0].Key)
			require.Equal(t, "after", ms[1].Fields()[0].Key)
		})
	}
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}

// TestRefusedCount refuses more lines than an Error quotes: all are counted.
func TestRefusedCount(t *testing.T) {
	var data []byte
	for i := range 15 {
		data = fmt.Appendf(data, "good_%d 1\nbad_%d x\n", i, i)
	}
	ms, err := parse(t, prometheus.Options{}, data)
	require.Len(t, ms, 15)
	var perr *parsers.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, 15, perr.Refused)
	require.Len(t, perr.Entries, parsers.MaxKept)
	require.Equal(t, 20, perr.Entries[parsers.MaxKept-1].Line)
}

// TestRefusedLineAddsNothing: a refused line of a summary or histogram adds nothing to
// its sample, and a refused sample does not fix its family's type.
func TestRefusedLineAddsNothing(t *testing.T) {
	data := "# TYPE h histogram\nh_bucket{le=\"1\"} -1\nh_count 2\nu x\n# TYPE u counter\nu 3\n"
	ms, err := parse(t, prometheus.Options{MetricVersion: 1}, []byte(data))
	require.Equal(t, 2, parsers.Refused(err))
	require.Equal(t, "u counter=float:3 1795809600000000000\nh count=float:2,sum=float:0 1795809600000000000\n", string(render(ms)))
}
