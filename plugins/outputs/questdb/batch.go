package questdb

import (
	"bytes"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// scratch is what one write in flight needs of its own, reused through the output's pool so
// that a steady stream of batches does not allocate.
type scratch struct {
	text    []byte                 // the serialized lines
	lines   []line                 // where each line is in text, and which metric it came from
	body    []byte                 // a request body assembled from lines that are not contiguous
	groups  httpout.Groups[string] // the batch split by table
	keys    []string               // validation scratch
	shape   shape
	dropped LineErrors
}

// line is one serialized metric: text[start:end] came from batch[idx].
type line struct{ idx, start, end int }

func (o *QuestDB) getScratch() *scratch { return o.scratch.Get() }

// maxKeptBytes is how many bytes of serialized lines and request body a scratch may hold
// and still be kept for later writes: enough for batches of 10,000 ordinary lines.
// Buffers that grew for an unusually large batch are left to the garbage collector.
const maxKeptBytes = 8 << 20

// putScratch keeps s for a later write, unless its buffers grew too large to keep.
func (o *QuestDB) putScratch(s *scratch) {
	if cap(s.text)+cap(s.body) <= maxKeptBytes {
		o.scratch.Put(s)
	}
}

func (s *scratch) reset() {
	s.text, s.lines, s.body, s.dropped = s.text[:0], s.lines[:0], s.body[:0], s.dropped[:0]
	s.groups.Reset()
	s.shape.reset()
}

// drop records that batch[idx] was refused.
func (s *scratch) drop(idx int, e *LineError) {
	e.Index = idx
	s.dropped = append(s.dropped, e)
}

// serialize checks every metric of batch at the given indexes (all of them when idx is nil),
// also against the learned column types when sch is not nil, and appends the good ones to
// s.text and s.lines; the refused ones go to s.dropped.
func (o *QuestDB) serialize(s *scratch, batch []morse.Metric, idx []int, sch *schema) {
	n := len(batch)
	if idx != nil {
		n = len(idx)
	}
	for k := range n {
		i := k
		if idx != nil {
			i = idx[k]
		}
		m := batch[i]
		if e := s.shape.check(m, o.set.maxNameLen, &s.keys, sch); e != nil {
			s.drop(i, e)
			continue
		}
		start := len(s.text)
		var err error
		if s.text, err = o.ser.AppendMetric(s.text, m); err != nil {
			s.drop(i, &LineError{Reason: morse.ReasonSerialize, Err: err})
			continue
		}
		if mayBreak(m) {
			s.text = escapeBreaks(s.text, start)
		}
		s.lines = append(s.lines, line{idx: i, start: start, end: len(s.text)})
	}
}

// escapeBreaks puts a backslash before each line feed and carriage return in the line that
// starts at text[start:] and ends in its own line feed. QuestDB ends a line at a bare line
// break even inside a quoted string, where InfluxDB does not; the serializer escapes breaks
// everywhere but in string values, so only those are changed, and QuestDB reads them back
// as the breaks they were. Most lines have none, and cost two byte searches.
func escapeBreaks(text []byte, start int) []byte {
	body := text[start : len(text)-1]
	if bytes.IndexByte(body, '\n') < 0 && bytes.IndexByte(body, '\r') < 0 {
		return text
	}
	// Rare: rebuild the line after the end of text, then move it into place.
	end := len(text)
	for _, c := range body {
		if c == '\n' || c == '\r' {
			text = append(text, '\\')
		}
		text = append(text, c)
	}
	text = append(text, '\n')
	n := copy(text[start:], text[end:])
	return text[:start+n]
}

// mayBreak reports whether m's line may hold a bare line break: only a string value can.
func mayBreak(m morse.Metric) bool {
	if lt, ok := m.Line(); ok {
		return strings.IndexByte(lt.Text, '"') >= 0
	}
	for _, f := range m.Fields() {
		if f.Value.Type() == morse.TypeString {
			return true
		}
	}
	return false
}

// groupByTable splits the batch by measurement, keeping batch order within each table.
// A line metric's name is read from its text, so it is not expanded. Only the positions are
// kept: the lines are serialized from the batch.
func (s *scratch) groupByTable(batch []morse.Metric) []httpout.Group[string] {
	s.groups.Reset()
	for _, m := range batch {
		s.groups.AddPosition(tableKey(m))
	}
	return s.groups.List()
}

// tableKey is the metric's table as written in line protocol. QuestDB compares table names
// without regard to case; two spellings of one table only cost an extra request.
func tableKey(m morse.Metric) string {
	if lt, ok := m.Line(); ok {
		head, _ := lt.Split()
		name, _ := splitUnescaped(head, ',')
		return name
	}
	return m.Name()
}

// bodyOf returns the request body of lines: a slice of s.text when they are contiguous, as
// they are until a line is taken out, else a copy assembled in s.body.
func (s *scratch) bodyOf(lines []line) []byte {
	if len(lines) == 0 {
		return nil
	}
	contiguous := true
	for i := 1; i < len(lines) && contiguous; i++ {
		contiguous = lines[i].start == lines[i-1].end
	}
	if contiguous {
		return s.text[lines[0].start:lines[len(lines)-1].end]
	}
	s.body = s.body[:0]
	for _, l := range lines {
		s.body = append(s.body, s.text[l.start:l.end]...)
	}
	return s.body
}

// replaceBody gives up body, which bodyOf returned and which now belongs to its caller, and
// takes spare in place of the buffer it came from. s is not used again before reset.
func (s *scratch) replaceBody(body, spare []byte) {
	if cap(spare) < cap(body) {
		// Sized at once for the next batch, rather than grown to it by doubling.
		spare = make([]byte, 0, cap(body))
	}
	if len(s.body) > 0 && &body[0] == &s.body[0] {
		s.body = spare
	} else {
		s.text = spare
	}
}

// protocolType is how QuestDB's cast errors name the ILP type of a value.
func protocolType(v morse.Value) string {
	switch v.Type() {
	case morse.TypeInt, morse.TypeUint:
		return "INTEGER"
	case morse.TypeFloat:
		return "FLOAT"
	case morse.TypeString:
		return "STRING"
	case morse.TypeBool:
		return "BOOLEAN"
	}
	return ""
}

// hasFieldOfType reports whether m has a field named column (QuestDB compares column names
// without regard to case) whose value QuestDB reads as protocol type typ.
func hasFieldOfType(m morse.Metric, column, typ string) bool {
	for _, f := range m.Fields() {
		if strings.EqualFold(f.Key, column) && protocolType(f.Value) == typ {
			return true
		}
	}
	return false
}
