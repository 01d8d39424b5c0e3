package influxdblistener

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// counting is an accumulator that only counts.
type counting struct{ n atomic.Int64 }

func (c *counting) AddMetric(morse.Metric)                                            { c.n.Add(1) }
func (c *counting) AddFields(string, map[string]any, map[string]string, ...time.Time) { c.n.Add(1) }
func (c *counting) AddError(error)                                                    {}
func (c *counting) added() int64                                                      { return c.n.Load() }

// handlerOnly returns the listener's handler without a network, for the fuzz target and the
// benchmark.
func handlerOnly(t testing.TB, acc morse.Accumulator, opts ...func(*InfluxDBListener)) *handler {
	t.Helper()
	l := newListener(t, opts...)
	require.NoError(t, l.setup())
	return newHandler(l, acc)
}

var rejected = regexp.MustCompile(`\((?:line \d+; )?(\d+) of (\d+) lines rejected\)(?: dropped=(\d+))?$`)

// FuzzWriteHandler drives the write handler with arbitrary bodies, plain or gzip. The
// handler must never panic, must answer 204, 400 or 413, and must account for every line:
// the metrics accepted plus the lines it says it rejected equal the lines of the body that
// are neither blank nor comments.
func FuzzWriteHandler(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, gz bool) {
		acc := &counting{}
		h := handlerOnly(t, acc, func(l *InfluxDBListener) { l.MaxBodySize = 4 << 10 })
		req := httptest.NewRequest("POST", "/write?db=fuzz", bytes.NewReader(body))
		if gz {
			req = httptest.NewRequest("POST", "/write?db=fuzz", bytes.NewReader(gzipped(body)))
			req.Header.Set("Content-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		accepted := int(acc.n.Load())
		lines, countable := entries(body)
		switch rec.Code {
		case http.StatusNoContent:
			if countable {
				require.Equal(t, lines, accepted, "every line accepted")
			}
		case http.StatusRequestEntityTooLarge:
			require.Greater(t, len(body), 4<<10)
			checkTooLarge(t, rec.Body.Bytes(), accepted)
		case http.StatusBadRequest:
			checkRejection(t, rec.Body.Bytes(), accepted, lines, countable)
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// tooLargeAnswer is the 413 answer's count of the lines kept before the limit.
var tooLargeAnswer = regexp.MustCompile(`^http: request body too large: more than max_body_size \(\d+ bytes, counted after decompression\); (\d+) lines accepted`)

// checkTooLarge checks a 413 answer: the lines it says were accepted are those delivered.
func checkTooLarge(t *testing.T, body []byte, accepted int) {
	var v struct{ Error string }
	require.NoError(t, json.Unmarshal(body, &v))
	m := tooLargeAnswer.FindStringSubmatch(v.Error)
	require.NotNil(t, m, "%q", v.Error)
	n, _ := strconv.Atoi(m[1])
	require.Equal(t, accepted, n, "the answer counts the lines delivered before the limit")
}

// checkRejection checks a 400 answer: its shape, and that the lines it counts add up.
func checkRejection(t *testing.T, body []byte, accepted, lines int, countable bool) {
	var v struct{ Error string }
	require.NoError(t, json.Unmarshal(body, &v))
	m := rejected.FindStringSubmatch(v.Error)
	require.NotNil(t, m, "the message counts the rejected lines: %q", v.Error)
	bad, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	require.Positive(t, bad)
	require.Equal(t, total, accepted+bad, "accepted + rejected = lines")
	if countable {
		require.Equal(t, lines, total, "the handler saw every line")
	}
	if accepted > 0 {
		require.Regexp(t, `^partial write: line \d+: unable to parse '`, v.Error)
		require.Equal(t, m[1], m[3], "dropped=N counts the rejected lines")
	} else {
		require.Regexp(t, `^unable to parse '`, v.Error)
		require.Empty(t, m[3], "no partial write, no dropped=N")
	}
}

// entries counts the lines of body that are neither blank nor comments, independently of
// the parser, by line protocol's rules for blank lines and comments: leading spaces are
// skipped, a line of nothing but a carriage return is blank, and a comment holding a control
// byte other than its final carriage return is not a comment but a malformed line. A string
// field value may hold a newline, so bodies with a double quote are not countable this way.
func entries(body []byte) (n int, countable bool) {
	if bytes.IndexByte(body, '"') >= 0 {
		return 0, false
	}
	for line := range bytes.SplitSeq(body, []byte("\n")) {
		line = bytes.TrimLeft(line, " ")
		switch {
		case len(line) == 0, string(line) == "\r":
		case line[0] == '#':
			text := bytes.TrimSuffix(line[1:], []byte("\r"))
			if bytes.ContainsFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				n++
			}
		default:
			n++
		}
	}
	return n, true
}

// TestEntries checks the fuzz target's own line counter on the cases it must get right.
func TestEntries(t *testing.T) {
	for body, want := range map[string]int{
		"":                       0,
		"m v=1\n\n  \r\n# c\r\n": 1,
		"\rx\n#a\tb\n  m v=1":    3,
		"#ok\r":                  0,
		"a\nb\nc":                3,
	} {
		n, ok := entries([]byte(body))
		require.True(t, ok)
		require.Equal(t, want, n, fmt.Sprintf("%q", body))
	}
}
