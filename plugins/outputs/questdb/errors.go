package questdb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/morse-agent/morse/plugins/common/httpout"
)

// Drop reasons of this output beyond the shared ones in package morse.
const (
	// ReasonUnsupportedValue: a value QuestDB cannot store as it is. An unsigned integer
	// above math.MaxInt64 does not fit its LONG; math.MinInt64 is how QuestDB writes NULL in
	// a LONG, so it would read back as NULL; a designated timestamp before 1970 is refused;
	// an integer out of the bounds of a BYTE, SHORT or INT column.
	ReasonUnsupportedValue = "unsupported_value"
	// ReasonInvalidName: a measurement, tag key or field key that QuestDB refuses as a table
	// or column name (see validName), or two columns of one metric whose names differ at
	// most in case.
	ReasonInvalidName = "invalid_name"
	// ReasonTableNotFound: a table that does not exist, on a server that does not create
	// tables (line.auto.create.new.tables=false), as InfluxDB's database_not_found.
	ReasonTableNotFound = "table_not_found"
	// ReasonTooLarge: one line alone is larger than QuestDB takes in one request.
	ReasonTooLarge = httpout.ReasonTooLarge
)

// LineError names one metric of a batch that QuestDB refused, or that this output refused
// before sending it because QuestDB would. Index is the metric's position in the batch that
// Write was given. Write reports every one of them, in a LineErrors, inside the
// *morse.PartialWriteError (some stored) or *morse.PermanentError (none stored) it returns,
// so that a caller can tell exactly which metrics were lost and why, for example to write
// them to a dead-letter file.
type LineError struct {
	Index  int
	Reason string // a morse.Reason* constant or one of this package's
	Err    error  // QuestDB's message, or why the output refused the metric
}

func (e *LineError) Error() string {
	return fmt.Sprintf("metric %d of the batch (%s): %v", e.Index, e.Reason, e.Err)
}

// Unwrap returns the underlying error.
func (e *LineError) Unwrap() error { return e.Err }

// LineErrors are the metrics of one batch that were dropped, in the order they were found.
type LineErrors []*LineError

func (l LineErrors) Error() string {
	switch len(l) {
	case 0:
		return "no metric dropped"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d metrics dropped; first: %v", len(l), l[0])
	return b.String()
}

// Unwrap lets errors.As find each LineError.
func (l LineErrors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Indexes returns the batch positions of the dropped metrics.
func (l LineErrors) Indexes() []int {
	out := make([]int, len(l))
	for i, e := range l {
		out[i] = e.Index
	}
	return out
}

// result turns what a write of a batch of n metrics came to into Write's answer: nil when
// nothing was dropped, else a *morse.PartialWriteError that lists the dropped positions,
// one part per reason (PartialWriteError.More), so that the batch writer counts, reports
// and dead-letters exactly those metrics under their own reasons. Each part's error is the
// LineErrors of its reason.
func result(n int, dropped LineErrors) error {
	if len(dropped) == 0 {
		return nil
	}
	var r httpout.Reasons
	lines := map[string]LineErrors{}
	for _, le := range dropped {
		r.Drop(le.Reason, le.Index)
		lines[le.Reason] = append(lines[le.Reason], le)
	}
	parts := r.Parts()
	for _, p := range parts {
		p.Err = lines[p.Reason]
	}
	parts[0].Written = max(0, n-len(dropped))
	return parts[0]
}

// errClosed is returned by a Write after Close.
var errClosed = errors.New("questdb: output is closed")
