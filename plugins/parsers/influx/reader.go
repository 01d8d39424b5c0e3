package influx

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/morse-agent/morse"
)

// readChunk is the initial read buffer of ParseReader; it grows for longer entries.
const readChunk = 64 << 10

// ErrLineTooLong is the reason (ParseError.Err) of an entry longer than Parser.MaxLineBytes,
// so that a listener can count such entries apart from malformed ones.
var ErrLineTooLong = errors.New("line too long")

// ParseReader parses line protocol from r as it arrives, for network listeners. Each complete
// entry is parsed as soon as its newline has been read; the entry at the end of the stream
// needs none. Metrics go to emit and refused entries to onErr (which may be nil), with line
// numbers counted from 1 for the whole stream.
//
// An entry longer than MaxLineBytes is reported once, with the reason "line too long", and
// skipped without being buffered. ParseReader returns nil at io.EOF. On any other error it
// returns that error after parsing the complete entries read before it; an unfinished last
// entry is dropped, because it may have been cut short.
func (p *Parser) ParseReader(r io.Reader, emit func(morse.Metric), onErr func(LineError)) error {
	_, err := p.ParseStream(r, nil, emit, onErr)
	return err
}

// ParseStream is ParseReader with a read buffer that the caller owns, so that a listener
// that parses many short streams (one HTTP body each) can reuse one buffer per stream rather
// than allocate one. It reads into buf's capacity (none: 64 KiB), grows it only for an entry
// longer than that, up to MaxLineBytes, and returns it, emptied, for the next stream.
//
// Metrics never refer to buf: the parser copies what a metric keeps, so the buffer may be
// reused as soon as ParseStream returns.
func (p *Parser) ParseStream(r io.Reader, buf []byte, emit func(morse.Metric), onErr func(LineError)) ([]byte, error) {
	if onErr == nil {
		onErr = func(LineError) {}
	}
	maxLine := p.MaxLineBytes
	if maxLine <= 0 {
		maxLine = defaultMaxLineBytes
	}
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(readChunk, maxLine+1))
	}
	full := buf[:0]
	if cap(buf) > maxLine+1 {
		// A longer entry is found when the buffer fills, so the buffer must not hold more
		// than an entry of maxLine bytes and its newline, and one byte to tell.
		buf = buf[: 0 : maxLine+1]
	}
	run := runPool.Get().(*run)
	run.reset(p, emit, onErr)
	defer run.release()
	st := &stream{run: run, maxLine: maxLine, buf: buf[:0]}
	for {
		st.makeRoom()
		n, err := r.Read(st.buf[len(st.buf):cap(st.buf)])
		st.buf = st.buf[:len(st.buf)+n]
		if n > 0 {
			st.run.nowSet = false // the next entry without a timestamp reads the clock afresh
			st.run.asLines = p.lines()
		}
		// Only a clean end of stream ends the last entry. After another error the stream was
		// cut off, and a last entry without its newline may be cut short too: "v=1234"
		// read as "v=12" would be a wrong value rather than an error.
		eof := errors.Is(err, io.EOF)
		st.parse(eof)
		if err != nil {
			if eof {
				err = nil
			}
			if unsafe.SliceData(st.buf[:0:1]) == unsafe.SliceData(full[:0:1]) {
				return full, err // not grown: the caller's buffer, with all its capacity
			}
			return st.buf[:0], err
		}
	}
}

// stream is the state of ParseReader between reads.
type stream struct {
	run     *run
	buf     []byte
	maxLine int
	// skipping is set while the rest of an over-long entry is read and thrown away.
	skipping bool
}

// parse handles every complete entry in the buffer and drops what is consumed.
func (st *stream) parse(atEOF bool) {
	sp := &st.run.sp
	if st.skipping {
		if _, ok := sp.next(st.buf, atEOF); !ok {
			st.drop(sp.pos)
			return
		}
		st.skipping = false
	}
	// Up to maxLine bytes the buffer can grow for the rest of an entry; beyond, the
	// splitter must find where the over-long entry ends.
	st.run.canWait = len(st.buf) <= st.maxLine
	st.run.parseAvailable(st.buf, atEOF)
	st.drop(sp.done)
}

// drop removes the first n bytes of the buffer.
func (st *stream) drop(n int) {
	if n == 0 {
		return
	}
	st.buf = st.buf[:copy(st.buf, st.buf[n:])]
	st.run.sp.shift(n)
}

// makeRoom ensures that the next read has space: it grows the buffer for a long entry, or
// gives up on an entry longer than maxLine, reports it and skips it.
func (st *stream) makeRoom() {
	if len(st.buf) < cap(st.buf) {
		return
	}
	sp := &st.run.sp
	if len(st.buf) <= st.maxLine {
		// Room for one byte more than maxLine, so that an entry of exactly maxLine bytes
		// and its newline fit, and a longer one is recognised.
		st.buf = slices.Grow(st.buf, min(2*cap(st.buf), st.maxLine+1)-len(st.buf))
		// Grow rounds the capacity up to a size class; beyond maxLine+1 it would let entries
		// up to about a fifth longer than the limit through.
		st.buf = st.buf[:len(st.buf):min(cap(st.buf), st.maxLine+1)]
		return
	}
	if sp.inEntry() && !st.skipping {
		e := sp.cur
		st.run.lines++
		st.run.onErr(LineError{
			Line: e.line,
			Text: quote(st.buf[e.start:min(len(st.buf), e.start+maxTextBytes+1)]),
			Err:  &ParseError{Reason: fmt.Sprintf("line too long (more than %d bytes)", st.maxLine), Err: ErrLineTooLong},
		})
		st.skipping = true
	}
	// Everything buffered has been scanned; the splitter's state is all that is needed to
	// find where the long entry (or a long comment) ends.
	st.drop(sp.pos)
}
