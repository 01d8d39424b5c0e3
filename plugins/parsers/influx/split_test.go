package influx

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type span3 struct {
	Text string
	Line int
}

func splitAll(data []byte, step int) []span3 {
	sp := newSplitter()
	var out []span3
	// Feed the data step bytes at a time, as a stream would arrive, to check that the
	// splitter resumes correctly in every state.
	for n := step; ; n += step {
		n = min(n, len(data))
		atEOF := n == len(data)
		for {
			e, ok := sp.next(data[:n], atEOF)
			if !ok {
				break
			}
			out = append(out, span3{string(data[e.start:e.end]), e.line})
		}
		if atEOF {
			return out
		}
	}
}

func TestSplitter(t *testing.T) {
	cases := []struct {
		in   string
		want []span3
	}{
		{"a v=1\nb v=2", []span3{{"a v=1\n", 1}, {"b v=2", 2}}},
		{"\n  \r\n# c\r\n  # d\n#e", nil},
		{"  a v=1\r\n\n", []span3{{"a v=1\r\n", 1}}},
		{"a s=\"x\ny\" 1\nb v=1\n", []span3{{"a s=\"x\ny\" 1\n", 1}, {"b v=1\n", 3}}},
		{"a s=\"q\\\"\n\\\\\" 1\nb v=1\n", []span3{{"a s=\"q\\\"\n\\\\\" 1\n", 1}, {"b v=1\n", 3}}},
		{"a\\ s=\"x\ny\"\n", []span3{{"a\\ s=\"x\n", 1}, {"y\"\n", 2}}},     // escaped space: no field set, so no string
		{"a\\\\ s=\"x\ny\"\n", []span3{{"a\\\\ s=\"x\n", 1}, {"y\"\n", 2}}}, // `\\ ` is a backslash, then an escaped space
		{"a t=x,s=\"x\ny\"\n", []span3{{"a t=x,s=\"x\ny\"\n", 1}}},
		{"a,k=\"v s=\"x\ny\"\n", []span3{{"a,k=\"v s=\"x\ny\"\n", 1}}},
		{"a v=1 s=\"x\ny\"\n", []span3{{"a v=1 s=\"x\n", 1}, {"y\"\n", 2}}}, // after the field set, quotes mean nothing
		{"# tab\there\nb v=1\n", []span3{{"# tab\there\n", 1}, {"b v=1\n", 2}}},
		{"\rx\nb v=1", []span3{{"\rx\n", 1}, {"b v=1", 2}}},
		{"a s=\"open\nb v=1", []span3{{"a s=\"open\nb v=1", 1}}},
	}
	for _, tc := range cases {
		for _, step := range []int{1, 2, 3, 1 << 20} {
			require.Equal(t, tc.want, splitAll([]byte(tc.in), step), "input %q step %d", tc.in, step)
		}
	}
}
