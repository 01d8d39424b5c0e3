package influx

// The line-protocol/v2 decoder does not say where in the input an entry starts, so it cannot
// tell us the line number of an entry that we refuse ourselves (a bad number, duplicate tags,
// a timestamp out of range), nor the text to quote in the error. The splitter finds the
// entries a second time, cheaply, with exactly the decoder's rules for blank lines, comments
// and entry ends. An entry usually is one line, but a string field value may hold newlines,
// so the splitter follows the structure of the line far enough to know when it is inside a
// string.
//
// For every entry that the decoder accepts, both agree by construction. On a malformed entry
// they may disagree about where it ends; the splitter's view is the one that counts, and
// parseAvailable gives the next entry a fresh decoder, so the two never drift apart. A
// malformed entry thus ends at the first newline outside a string value, as in InfluxDB.

// entry is one line-protocol entry found by the splitter.
type entry struct {
	start, end int // data[start:end] is the entry, with its line ending
	line       int // the 1-based line number that the entry starts on
}

// splitState is where the splitter is within a line.
type splitState uint8

const (
	stLine        splitState = iota // at the start of a line, possibly after spaces
	stLineCR                        // a carriage return at the start of a line
	stComment                       // inside a comment line
	stCommentCR                     // a carriage return at the end of a comment line
	stKey                           // measurement and tags
	stKeyEsc                        // after a backslash in the measurement or tags
	stFieldStart                    // the spaces before the field set
	stFieldKey                      // a field key
	stFieldKeyEsc                   // after a backslash in a field key
	stValueStart                    // the first byte of a field value
	stValue                         // a field value other than a string, or after one
	stStr                           // inside a string field value
	stStrEsc                        // after a backslash inside a string field value
	stRest                          // the timestamp and anything after it
	stErrLine                       // a line that the decoder refuses up to its newline
)

// stopSet lists the bytes that matter in a state. States that consume one byte at a time do
// not skip.
type stopSet struct {
	skips bool
	at    [256]bool
}

var stops = func() (t [stErrLine + 1]stopSet) {
	set := func(st splitState, bytes string) {
		t[st].skips = true
		for i := 0; i < len(bytes); i++ {
			t[st].at[bytes[i]] = true
		}
	}
	set(stKey, "\\ \n")
	set(stFieldKey, "\\=\n")
	set(stValue, ", \n")
	set(stStr, "\\\"\n")
	set(stRest, "\n")
	set(stErrLine, "\n")
	return t
}()

// splitter finds entries in a buffer that may grow between calls, so that a stream can be
// split as it arrives. Offsets are into the caller's buffer; shift moves them when the
// caller drops consumed bytes from its front.
type splitter struct {
	pos       int // next byte to scan
	line      int // line number of data[pos]
	lineStart int // offset of the current line's first byte
	done      int // offset after the last complete entry or skipped line
	st        splitState
	cur       entry // the entry being scanned, valid from its start state on
	// letters are the offsets in the current entry of the backslashes of `\n`, `\r` and `\t`
	// inside its string values, which the reference path keeps as they are (literalEscapes).
	letters []int
}

func newSplitter() splitter { return splitter{line: 1} }

// inEntry reports whether the splitter is inside an entry that it has not finished.
func (s *splitter) inEntry() bool { return s.st >= stKey }

// shift forgets the first n bytes of the buffer, which the caller has dropped.
func (s *splitter) shift(n int) {
	s.pos -= n
	s.lineStart = max(s.lineStart-n, 0)
	s.done = max(s.done-n, 0)
	if lost := n - s.cur.start; lost > 0 {
		// The entry's first bytes are gone: offsets count from what is left.
		kept := s.letters[:0]
		for _, off := range s.letters {
			if off >= lost {
				kept = append(kept, off-lost)
			}
		}
		s.letters = kept
	}
	s.cur.start = max(s.cur.start-n, 0)
}

// begin starts an entry at offset at, in state st. An entry that starts on a line whose
// beginning a stream has already dropped (a very long blank line) starts at offset 0.
func (s *splitter) begin(at int, st splitState) {
	s.cur = entry{start: max(at, 0), line: s.line}
	s.letters = s.letters[:0]
	s.st = st
}

// newline consumes a newline that ends a line outside of any entry.
func (s *splitter) newline() {
	s.pos++
	s.line++
	s.lineStart = s.pos
	s.done = s.pos
	s.st = stLine
}

// finish ends the current entry at end, just after its newline or at the end of input.
func (s *splitter) finish(end int) entry {
	e := s.cur
	e.end = end
	s.pos, s.lineStart, s.done = end, end, end
	s.st = stLine
	return e
}

// next returns the next complete entry of data. With atEOF false, an entry is complete only
// once its newline has arrived; with atEOF true, the end of data also ends one. It reports
// false when data holds no further complete entry.
func (s *splitter) next(data []byte, atEOF bool) (entry, bool) {
	for s.pos < len(data) {
		if stop := &stops[s.st]; stop.skips {
			// Most bytes of an entry change nothing; jump to the next one that can.
			i := s.pos
			for i < len(data) && !stop.at[data[i]] {
				i++
			}
			if s.pos = i; i == len(data) {
				break
			}
		}
		c := data[s.pos]
		if s.st < stKey {
			s.skip(c)
			continue
		}
		if c == '\n' && s.endsAtNewline() {
			s.line++
			return s.finish(s.pos + 1), true
		}
		s.step(c)
	}
	if atEOF && s.inEntry() {
		return s.finish(len(data)), true
	}
	if atEOF {
		s.done = len(data)
	}
	return entry{}, false
}

// endsAtNewline reports whether a newline in the current state ends the entry. Only a string
// value holds a newline; after a backslash in a key, a newline still ends the line because
// the decoder does not treat it as escaped.
func (s *splitter) endsAtNewline() bool {
	return s.st != stStr && s.st != stStrEsc
}

// skip handles one byte between entries: spaces, blank lines and comments, exactly as the
// decoder's skipEmptyLines does. A comment with a control character in it, or a lone
// carriage return, is not skipped by the decoder but refused as an entry up to its newline.
func (s *splitter) skip(c byte) {
	switch s.st {
	case stLine:
		switch c {
		case ' ':
			s.pos++
		case '#':
			s.st = stComment
			s.pos++
		case '\n':
			s.newline()
		case '\r':
			s.st = stLineCR
			s.pos++
		default:
			s.begin(s.pos, stKey)
		}
	case stLineCR:
		if c == '\n' {
			s.newline()
			return
		}
		s.begin(s.pos-1, stErrLine)
	case stComment:
		switch {
		case c == '\n':
			s.newline()
		case c == '\r':
			s.st = stCommentCR
			s.pos++
		case c < 0x20 || c == 0x7f:
			s.begin(s.lineStart, stErrLine)
		default:
			s.pos++
		}
	case stCommentCR:
		if c == '\n' {
			s.newline()
			return
		}
		s.begin(s.lineStart, stErrLine)
	}
}

// step handles one byte inside an entry that is not a newline ending it. A state that hands a
// byte on to the next state returns without consuming it.
func (s *splitter) step(c byte) {
	switch s.st {
	case stKey:
		switch c {
		case '\\':
			s.st = stKeyEsc
		case ' ':
			s.st = stFieldStart
		}
	case stKeyEsc, stFieldKeyEsc:
		back := stKey
		if s.st == stFieldKeyEsc {
			back = stFieldKey
		}
		s.st = back
		if c != ' ' && c != ',' && c != '=' {
			return // not an escape: the backslash stands for itself and c is read afresh
		}
	case stFieldStart:
		if c != ' ' {
			s.st = stFieldKey
			return
		}
	case stFieldKey:
		switch c {
		case '\\':
			s.st = stFieldKeyEsc
		case '=':
			s.st = stValueStart
		}
	case stValueStart:
		if c != '"' {
			s.st = stValue
			return
		}
		s.st = stStr
	case stValue:
		switch c {
		case ',':
			s.st = stFieldKey
		case ' ':
			s.st = stRest
		}
	case stStr:
		s.stepString(c)
	case stStrEsc:
		s.st = stStr
		if c == 'n' || c == 'r' || c == 't' {
			// The decoder reads a newline, InfluxDB 1.x a backslash and the letter.
			s.letters = append(s.letters, s.pos-1-s.cur.start)
		} else if c != '\\' && c != '"' {
			return
		}
	}
	s.pos++
}

// stepString handles one byte of a string value.
func (s *splitter) stepString(c byte) {
	switch c {
	case '\\':
		s.st = stStrEsc
	case '"':
		s.st = stValue
	case '\n':
		s.line++
	}
}
