// Package parsers is the contract between the inputs that take Telegraf's data_format and
// the parser of each format (one package each under plugins/parsers). An input builds its
// parser once, from its options, and hands it whole payloads (a file, a command's output, a
// message, a request body) or, where the input reads a stream, one line at a time.
//
// Every format keeps the valid entries around a malformed one: Parse emits what it can read
// and reports what it refused in an *Error, with each entry's position, so that the input
// counts and logs them and loses nothing else.
package parsers

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/morse-agent/morse"
)

// Parser reads the metrics of one data format. Parse reads every entry of data, calls emit
// for each metric in input order, and returns nil or an *Error naming the entries it
// refused; a refused entry never stops the parse. A Parser may be called from one goroutine
// at a time unless its package says otherwise.
type Parser interface {
	Parse(data []byte, emit func(morse.Metric)) error
}

// LineParser is the capability of a parser whose entries are lines and which keeps state
// from one to the next (csv's header rows, csv_skip_rows): inputs that read a stream line
// by line (tail, socket_listener) call ParseLine for each line, without its line ending,
// where Telegraf calls its parsers' ParseLine.
type LineParser interface {
	ParseLine(line []byte, emit func(morse.Metric)) error
}

// Settings are what an input tells each parser it builds, beside the format's own options.
type Settings struct {
	// MetricName is the measurement of metrics whose entries name none: the input's name
	// ("file", "exec", "tail", ...), as Telegraf's parsers are given it, unless the input
	// has name_override, which is applied after the parse as for any metric.
	MetricName string
	// Now gives the time of entries without a timestamp; nil means time.Now.
	Now func() time.Time
}

// Clock returns s.Now, or time.Now when it is nil.
func (s Settings) Clock() func() time.Time {
	if s.Now == nil {
		return time.Now
	}
	return s.Now
}

// MaxKept is how many refused entries an Error quotes; the rest are only counted.
const MaxKept = 10

// MaxText is about how many bytes of a refused entry an EntryError quotes.
const MaxText = 100

// Excerpt is the Text of an EntryError for a refused entry: the entry whole, or its first
// MaxText bytes or fewer, cut at a character boundary, and "...".
func Excerpt[T string | []byte](entry T) string {
	if len(entry) <= MaxText {
		return string(entry)
	}
	cut := MaxText
	for cut > 0 && !utf8.RuneStart(entry[cut]) {
		cut--
	}
	return string(entry[:cut]) + "..."
}

// EntryError is one refused entry.
type EntryError struct {
	Line   int    // 1-based line where the entry starts in the payload, 0 where the format has no lines
	Column int    // 1-based byte column within that line, 0 if not known
	Text   string // the entry, or its start cut to about MaxText bytes (Excerpt)
	Err    error  // why it was refused
}

// Error formats the entry as "line 3: <reason>: <text>".
func (e EntryError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ", column %d", e.Column)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	if e.Text != "" {
		fmt.Fprintf(&b, ": %q", e.Text)
	}
	return b.String()
}

// Unwrap returns the reason.
func (e EntryError) Unwrap() error { return e.Err }

// Error is what Parse returns when it refused entries: how many, and the first MaxKept of
// them in input order. Inputs find it with errors.As to count the refused entries.
type Error struct {
	Refused int
	Entries []EntryError
}

// Add records one refused entry.
func (e *Error) Add(entry EntryError) {
	e.Refused++
	if len(e.Entries) < MaxKept {
		e.Entries = append(e.Entries, entry)
	}
}

// Err returns e as an error, or nil if it holds no refused entry, so that a parser can end
// with `return errs.Err()`.
func (e *Error) Err() error {
	if e == nil || e.Refused == 0 {
		return nil
	}
	return e
}

// Error lists the kept entries one per line and the number of the others.
func (e *Error) Error() string {
	msgs := make([]string, 0, len(e.Entries)+1)
	for _, entry := range e.Entries {
		msgs = append(msgs, entry.Error())
	}
	if more := e.Refused - len(e.Entries); more > 0 {
		msgs = append(msgs, fmt.Sprintf("(%d more entries refused)", more))
	}
	return strings.Join(msgs, "\n")
}

// Refused returns how many entries err says were refused: Error.Refused when err holds an
// *Error, 1 for any other non-nil error (a payload refused whole), 0 for nil.
func Refused(err error) int {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Refused
	}
	return 1
}
