package influx

import (
	"bytes"
	"reflect"
	"testing"
	"testing/iotest"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	serializer "github.com/morse-agent/morse/plugins/serializers/influx"
)

var fuzzNow = time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)

type fuzzPoint struct {
	Name   string
	Tags   []morse.Tag
	Fields []morse.Field
	Time   int64
}

func pointOf(m morse.Metric) fuzzPoint {
	return fuzzPoint{m.Name(), m.Tags(), m.Fields(), m.Time().UnixNano()}
}

// FuzzParse feeds arbitrary bytes to the parser. It must never panic, its counts must add up,
// the fast path and line metrics must give exactly what the reference path gives, the
// streaming form must give exactly what Parse gives however the stream is cut, and every
// metric it emits must serialize and parse back to itself. The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=1.5,n=2i,u=3u,ok=true,s=\"x\" 1700000000000000000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &Parser{Now: func() time.Time { return fuzzNow }}
		var got []fuzzPoint
		var metrics []morse.Metric
		res := p.Parse(data, func(m morse.Metric) {
			metrics = append(metrics, m)
			got = append(got, pointOf(m))
		})
		require.Equal(t, res.Lines, res.Metrics+res.Errors)
		require.Equal(t, len(got), res.Metrics)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, e := range res.Errs {
			require.GreaterOrEqual(t, e.Line, 1)
			require.LessOrEqual(t, e.Line, lines)
		}

		// The fast path and the reference path agree on every metric and every error.
		fast, _ := parseWith(data, false)
		ref, _ := parseWith(data, true)
		require.Equal(t, ref, fast)
		require.Equal(t, ref, streamWith(t, data, 7), "a stream read 7 bytes at a time")
		// So do line metrics once expanded, and their text reads back as it should.
		checkLines(t, data)

		// One byte per read puts a fresh decoder at almost every entry, which checks that
		// the shared decoder of Parse never drifts from the splitter.
		var streamed []fuzzPoint
		var streamErrs []LineError
		err := p.ParseReader(iotest.OneByteReader(bytes.NewReader(data)),
			func(m morse.Metric) { streamed = append(streamed, pointOf(m)) },
			func(e LineError) { streamErrs = append(streamErrs, e) })
		require.NoError(t, err)
		require.Equal(t, got, streamed)
		require.Len(t, streamErrs, res.Errors)
		require.Equal(t, res.Errs, streamErrs[:len(res.Errs)])

		// With a small MaxLineBytes, long entries are refused and the others parse as before.
		var limited []fuzzPoint
		small := &Parser{Now: p.Now, MaxLineBytes: 16}
		err = small.ParseReader(iotest.OneByteReader(bytes.NewReader(data)),
			func(m morse.Metric) { limited = append(limited, pointOf(m)) }, nil)
		require.NoError(t, err)
		require.True(t, isSubsequence(limited, got), "%v is not a subsequence of %v", limited, got)

		if res.Errors == 0 {
			// Where every entry is valid, the splitter must see exactly the entries that the
			// decoder sees on its own, with the same blank lines and comments skipped.
			require.Equal(t, decoderEntries(data), res.Lines)
		}

		s := serializer.New(serializer.Options{UintSupport: true})
		for _, m := range metrics {
			line, err := s.AppendMetric(nil, m)
			require.NoError(t, err, "metric %#v", m)
			var back []fuzzPoint
			r2 := p.Parse(line, func(m morse.Metric) { back = append(back, pointOf(m)) })
			require.Zero(t, r2.Errors, "line %q: %v", line, r2.Err())
			require.Equal(t, []fuzzPoint{pointOf(m)}, back, "line %q", line)
		}
	})
}

func isSubsequence(sub, of []fuzzPoint) bool {
	i := 0
	for _, p := range of {
		if i < len(sub) && reflect.DeepEqual(sub[i], p) {
			i++
		}
	}
	return i == len(sub)
}

// decoderEntries counts the entries that the line-protocol decoder finds on its own.
func decoderEntries(data []byte) int {
	d := lineprotocol.NewDecoderWithBytes(data)
	n := 0
	for d.Next() {
		n++
	}
	return n
}
