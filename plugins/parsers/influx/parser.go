// Package influx parses InfluxDB line protocol into metrics.
//
// Ordinary entries take a single-pass fast path (fast.go). Every other entry, valid or not,
// is judged by the decoder of github.com/influxdata/line-protocol/v2, the reference, and a
// differential fuzz test holds the fast path to what the reference gives. On top of the
// decoder it adds what a listener needs: exact line numbers for every refused line,
// InfluxDB 1.x's wording for the reason ("unable to parse 'x': bad timestamp"), the valid
// lines around a bad one kept, precisions up to hours, and a streaming form for network
// connections.
//
// One detail differs from InfluxDB 1.x because the v2 decoder is stricter: control bytes and
// invalid UTF-8 in names and keys are refused. Inside a string field value only `\"` and `\\`
// are escapes, as in InfluxDB 1.x and Telegraf's default parser: `\n`, `\r`, `\t` stay a
// backslash and a letter (the v2 decoder alone would read a newline, carriage return and
// tab; see literalEscapes). Duplicate tag keys are refused with "duplicate tags", as
// InfluxDB does.
package influx

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
)

// MaxKeptErrors is how many LineErrors a Result keeps. A flood of bad lines is counted in
// full but does not grow memory.
const MaxKeptErrors = 10

// maxTextBytes is how much of a bad line a LineError quotes.
const maxTextBytes = parsers.MaxText

// defaultMaxLineBytes bounds one entry read by ParseReader when Parser.MaxLineBytes is zero.
const defaultMaxLineBytes = 1 << 20

// Parser reads line protocol. Its fields are configuration only, so one Parser may be used
// by many goroutines at once.
type Parser struct {
	// Precision is the unit of the timestamps in the input; zero means nanoseconds.
	// ParsePrecision turns InfluxDB's precision parameter ("ns", "u", "ms", "s", "m", "h")
	// into it.
	Precision time.Duration
	// Now gives the time of lines without a timestamp; nil means time.Now. It is called once
	// per Parse and once per read in ParseReader, so every line of one write shares a time,
	// as in InfluxDB, truncated to Precision.
	Now func() time.Time
	// MaxLineBytes limits one entry read by ParseReader; zero means 1 MiB. A longer entry is
	// reported as an error and skipped, so that one client cannot make the listener buffer
	// without bound. Parse has no limit: its input is already in memory.
	MaxLineBytes int
	// LineMetrics, when set, is asked once per Parse and once per read in ParseReader
	// whether to emit ordinary entries as line metrics (morse.NewLineMetric): checked, not
	// taken apart. Entries that a line metric cannot carry faithfully are parsed as usual.
	// Listeners set it to their accumulator's PrefersLines (morse.LineAccumulator).
	LineMetrics func() bool

	// reference makes every entry take the reference path (the splitter and the decoder),
	// so that tests can hold the fast path to what the reference path produces.
	reference bool
}

// Result sums up one Parse call.
type Result struct {
	Lines   int         // entries seen: lines that are neither blank nor comments
	Metrics int         // entries turned into metrics
	Errors  int         // entries refused
	First   *LineError  // the first refused entry, nil if none
	Errs    []LineError // the first MaxKeptErrors refused entries, in input order

	fast int // entries the fast path parsed, for tests
}

// Err returns nil when no line was refused, and otherwise an error that quotes the kept
// LineErrors one per line, the way InfluxDB 1.x joins them in its answer.
func (r Result) Err() error {
	if r.Errors == 0 {
		return nil
	}
	msgs := make([]string, len(r.Errs))
	for i, e := range r.Errs {
		msgs[i] = e.Error()
	}
	if more := r.Errors - len(r.Errs); more > 0 {
		msgs = append(msgs, fmt.Sprintf("(%d more lines could not be parsed)", more))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

func (r *Result) add(e LineError) {
	r.Errors++
	if r.First == nil {
		first := e
		r.First = &first
	}
	if len(r.Errs) < MaxKeptErrors {
		r.Errs = append(r.Errs, e)
	}
}

// LineError is one refused entry.
type LineError struct {
	Line int    // 1-based line number where the entry starts, within the input or stream
	Text string // the entry without its line ending, cut to about 100 bytes
	Err  error  // why it was refused, usually a *ParseError
}

// Error formats the error as InfluxDB 1.x does: unable to parse '<line>': <reason>.
func (e LineError) Error() string {
	return "unable to parse '" + e.Text + "': " + e.Err.Error()
}

// Unwrap returns the reason.
func (e LineError) Unwrap() error { return e.Err }

// ParseError is the reason an entry was refused. Reason uses InfluxDB 1.x's words ("bad
// timestamp", "missing fields", "invalid field format", "missing tag value", ...) where the
// decoder's error maps onto one of them, and the decoder's own message otherwise.
type ParseError struct {
	Reason string // InfluxDB's words, or the decoder's message where none fit
	Err    error  // the decoder's error with its line and column, ErrLineTooLong, or nil for our own checks
}

// Error returns the reason.
func (e *ParseError) Error() string { return e.Reason }

// Unwrap returns the decoder's error, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// ParsePrecision reads the precision parameter of InfluxDB's /write endpoint. The empty
// string means nanoseconds.
func ParsePrecision(s string) (time.Duration, error) {
	switch s {
	case "", "n", "ns":
		return time.Nanosecond, nil
	case "u", "us", "µs":
		return time.Microsecond, nil
	case "ms":
		return time.Millisecond, nil
	case "s":
		return time.Second, nil
	case "m":
		return time.Minute, nil
	case "h":
		return time.Hour, nil
	}
	return 0, fmt.Errorf("invalid precision %q (use n, u, ms, s, m or h)", s)
}

// Parse parses every entry of data, calls emit for each metric and returns the counts and
// the first refused entries. A refused entry never stops the parse: the valid entries
// around it are emitted.
func (p *Parser) Parse(data []byte, emit func(morse.Metric)) Result {
	r := runPool.Get().(*run)
	r.reset(p, emit, nil)
	r.parseAvailable(data, true)
	res := r.res
	res.Lines, res.Metrics, res.fast = r.lines, r.metrics, r.fast
	r.release()
	return res
}

func (p *Parser) precision() int64 {
	if p.Precision <= 0 {
		return 1
	}
	return int64(p.Precision)
}

func (p *Parser) lines() bool {
	return p.LineMetrics != nil && !p.reference && p.LineMetrics()
}

// readClock reads clock, or the wall clock when it is nil, truncated to prec nanoseconds.
func readClock(clock func() time.Time, prec int64) time.Time {
	if clock == nil {
		clock = time.Now
	}
	// Truncate also strips the monotonic clock reading, which has no place in a metric.
	return clock().Truncate(time.Duration(prec))
}

// quote returns the text of a refused entry for its LineError: without its line ending, cut
// at a character boundary near maxTextBytes.
func quote(b []byte) string {
	return parsers.Excerpt(trimEOL(b))
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
