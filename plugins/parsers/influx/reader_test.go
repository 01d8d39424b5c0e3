package influx_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// mixedInput has good and bad entries, comments, CRLF and strings that span lines.
const mixedInput = "# header\r\n" +
	"cpu,host=a usage=1.5 1000\r\n" +
	"p v=2 garbage\n" +
	"log msg=\"first\nsecond\" 2000\n" +
	"\n" +
	"bad,a s=\"x\ny\" 1\n" +
	"m v=1.5i\n" +
	"mem used=10i 3000"

func readAll(t *testing.T, p *influx.Parser, r io.Reader) ([]point, []influx.LineError, error) {
	t.Helper()
	var (
		got  []point
		errs []influx.LineError
	)
	err := p.ParseReader(r, func(m morse.Metric) { got = append(got, toPoint(m)) }, func(e influx.LineError) { errs = append(errs, e) })
	return got, errs, err
}

func TestParseReaderMatchesParse(t *testing.T) {
	p := &influx.Parser{Now: func() time.Time { return now }}
	want, res := parseString(t, p, mixedInput)
	require.Equal(t, 3, res.Metrics)
	require.Equal(t, []int{3, 7, 9}, []int{res.Errs[0].Line, res.Errs[1].Line, res.Errs[2].Line})
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(mixedInput) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(mixedInput)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(mixedInput)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader(mixedInput)) },
	}
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			got, errs, err := readAll(t, p, r())
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.Equal(t, res.Errs, errs)
		})
	}
}

// TestParseReaderStreams checks that each line is emitted as soon as it has arrived, before
// the next one is written: a listener must not wait for the connection to close.
func TestParseReaderStreams(t *testing.T) {
	pr, pw := io.Pipe()
	emitted := make(chan string)
	done := make(chan error, 1)
	go func() {
		p := &influx.Parser{}
		done <- p.ParseReader(pr, func(m morse.Metric) { emitted <- m.Name() }, nil)
	}()
	for _, name := range []string{"first", "second", "third"} {
		_, err := io.WriteString(pw, name+" v=1\n")
		require.NoError(t, err)
		require.Equal(t, name, <-emitted)
	}
	require.NoError(t, pw.Close())
	require.NoError(t, <-done)
}

func TestParseReaderLongLines(t *testing.T) {
	long := "big,host=" + strings.Repeat("x", 60) + " v=1"
	in := "a v=1\n" + long + "\nb v=2\n# " + strings.Repeat("c", 60) + "\nc v=3\n" + long
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
	} {
		t.Run(name, func(t *testing.T) {
			p := &influx.Parser{MaxLineBytes: 32}
			got, errs, err := readAll(t, p, r)
			require.NoError(t, err)
			require.Len(t, got, 3)
			require.Equal(t, []string{"a", "b", "c"}, []string{got[0].Name, got[1].Name, got[2].Name})
			require.Len(t, errs, 2)
			require.Equal(t, []int{2, 6}, []int{errs[0].Line, errs[1].Line})
			require.Equal(t, "line too long (more than 32 bytes)", errs[0].Err.Error())
			require.True(t, strings.HasPrefix(long, errs[0].Text), errs[0].Text)
		})
	}

	// Long blank and comment lines are not entries: they are skipped without an error,
	// even when a lone carriage return at their end makes the rest of the line one.
	in = strings.Repeat(" ", 50) + "\rx\n# " + strings.Repeat("c", 50) + "\nok v=1\n"
	got, errs, err := readAll(t, &influx.Parser{MaxLineBytes: 8}, iotest.OneByteReader(strings.NewReader(in)))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Len(t, errs, 1)
	require.Equal(t, 1, errs[0].Line)

	// An entry of exactly MaxLineBytes is fine.
	p := &influx.Parser{MaxLineBytes: len(long)}
	got, errs, err = readAll(t, p, iotest.OneByteReader(strings.NewReader(long+"\n"+long)))
	require.NoError(t, err)
	require.Empty(t, errs)
	require.Len(t, got, 2)
}

func TestParseReaderError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("a v=1\nb v=12"), iotest.ErrReader(boom))
	got, errs, err := readAll(t, &influx.Parser{}, r)
	require.ErrorIs(t, err, boom)
	require.Len(t, got, 1, "the cut-off last line is dropped, not parsed as b v=12")
	require.Equal(t, "a", got[0].Name)
	require.Empty(t, errs)
}

func TestParseReaderLineNumbersSpanReads(t *testing.T) {
	var b bytes.Buffer
	for i := range 20000 {
		if i%1000 == 999 {
			b.WriteString("broken\n")
			continue
		}
		b.WriteString("m,host=web v=1,s=\"two\nlines\" 1\n")
	}
	_, errs, err := readAll(t, &influx.Parser{}, &b)
	require.NoError(t, err)
	require.Len(t, errs, 20)
	for i, e := range errs {
		// Each good entry takes two lines and each broken one a single line, so the k-th
		// entry, with i broken ones before it, starts on line 2k-i+1.
		k := 1000*i + 999
		require.Equal(t, 2*k-i+1, e.Line, "error %d", i)
	}
}

// TestParseStreamReusesTheCallersBuffer: the buffer comes back with its capacity, metrics
// parsed from it stay intact when it is overwritten by the next stream, and MaxLineBytes
// holds even when the buffer is larger than it.
func TestParseStreamReusesTheCallersBuffer(t *testing.T) {
	buf := make([]byte, 0, 64<<10)
	var kept []morse.Metric
	var want []point
	for i := range 20 {
		in := strings.Repeat(fmt.Sprintf("cpu,host=h%d usage=%d.5,s=\"x%d\" %d\n", i, i, i, i+1), 50)
		var err error
		buf, err = (&influx.Parser{}).ParseStream(iotest.HalfReader(strings.NewReader(in)), buf, func(m morse.Metric) {
			kept, want = append(kept, m), append(want, toPoint(m))
		}, nil)
		require.NoError(t, err)
		require.Equal(t, 64<<10, cap(buf), "the caller's buffer, whole")
		clear(buf[:cap(buf)])
	}
	require.Len(t, kept, 20*50)
	for i, m := range kept {
		require.Equal(t, want[i], toPoint(m), "metric %d kept its values", i)
	}

	p := &influx.Parser{MaxLineBytes: 16}
	var errs []influx.LineError
	n := 0
	_, err := p.ParseStream(strings.NewReader("a v=1\n"+strings.Repeat("b", 40)+" v=1\nc v=2\n"), buf,
		func(morse.Metric) { n++ }, func(e influx.LineError) { errs = append(errs, e) })
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, errs, 1)
	require.Equal(t, 2, errs[0].Line)
	require.ErrorIs(t, errs[0], influx.ErrLineTooLong)
	require.Contains(t, errs[0].Error(), "line too long (more than 16 bytes)")
}

// TestMaxLineBytesIsExact: a line just over max_line_size is refused, however the buffer grew
// on the way to it (growing rounds capacities up), and one at the limit is kept.
func TestMaxLineBytesIsExact(t *testing.T) {
	const limit = 100_000
	for _, tc := range []struct {
		extra int // bytes beyond the limit, newline excluded
		kept  bool
	}{{0, true}, {1, false}, {4_000, false}} {
		line := "m v=\"" + strings.Repeat("x", limit-len("m v=\"\"")+tc.extra) + "\""
		var n int
		var errs []influx.LineError
		_, err := (&influx.Parser{MaxLineBytes: limit}).ParseStream(strings.NewReader(line+"\nn v=1\n"), nil,
			func(morse.Metric) { n++ }, func(e influx.LineError) { errs = append(errs, e) })
		require.NoError(t, err)
		if tc.kept {
			require.Equal(t, 2, n, "%d bytes", len(line))
			require.Empty(t, errs)
			continue
		}
		require.Equal(t, 1, n, "%d bytes", len(line))
		require.Len(t, errs, 1)
		require.ErrorIs(t, errs[0], influx.ErrLineTooLong)
	}
}
