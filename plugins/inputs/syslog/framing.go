package syslog

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/morse-agent/morse"
)

// maxNonTransparent bounds one message under non-transparent framing, which has no length
// of its own (max_message_length is for octet-counting only, as in Telegraf): a sender that
// never sends the trailer cannot make a connection hold more than this.
const maxNonTransparent = 1 << 20

// frameError is a message, or bytes that are not one, that the framing refused or that
// failed to parse, at Offset bytes into the connection.
type frameError struct {
	Offset int64
	Err    error
}

func (e *frameError) Error() string { return fmt.Sprintf("at byte %d: %v", e.Offset, e.Err) }
func (e *frameError) Unwrap() error { return e.Err }

// stream splits one connection into messages and hands each to the decoder.
type stream struct {
	d      *decoder
	r      *bufio.Reader
	off    int64 // bytes of the connection consumed
	emit   func(morse.Metric)
	report func(error) // a malformed message or frame, already counted
}

// newStream reads r with a buffer that holds the largest octet-counting message whole.
func (s *Syslog) newStream(d *decoder, r io.Reader, emit func(morse.Metric), report func(error)) *stream {
	size := max(4096, int(s.MaxMessageLength)+16)
	if s.Framing == "non-transparent" {
		size = 16 << 10
	}
	return &stream{d: d, r: bufio.NewReaderSize(r, size), emit: emit, report: report}
}

// message decodes one message that starts at byte off, keeping what it gives.
func (st *stream) message(off int64, msg []byte, orErr error) {
	m, ok, err := st.d.decode(msg)
	if ok {
		st.emit(m)
	}
	if err == nil {
		err = orErr
	}
	if err != nil {
		st.report(&frameError{Offset: off, Err: err})
	}
}

// framing reports bytes at off that cannot be split into a message.
func (st *stream) framing(off int64, err error) {
	st.d.s.c.framing.Incr()
	st.report(&frameError{Offset: off, Err: err})
}

// octetCounting reads "MSGLEN SP MSG" frames (RFC 6587 3.4.1) until the connection ends,
// and returns why it ended (nil at a clean end). A line feed between frames, which some
// senders add, is skipped, as go-syslog skips it. After a malformed length the stream is
// read on from the next line feed, the only point a sender may start afresh.
func (st *stream) octetCounting(maxLen int) error {
	for {
		b, err := st.r.ReadByte()
		if err != nil {
			return cleanEnd(err)
		}
		start := st.off
		st.off++
		if b == '\n' {
			continue
		}
		n, err := st.msgLen(b, maxLen)
		if err != nil {
			if errors.Is(err, io.EOF) || !errors.Is(err, errBadLength) {
				return cleanEnd(err)
			}
			st.framing(start, err)
			if err := st.skipLine(); err != nil {
				return cleanEnd(err)
			}
			continue
		}
		if n > maxLen {
			st.framing(start, fmt.Errorf("message too long: %d octets, max_message_length is %d", n, maxLen))
			d, err := st.r.Discard(n)
			st.off += int64(d)
			if err != nil {
				return cleanEnd(err)
			}
			continue
		}
		msg, err := st.r.Peek(n)
		if err != nil {
			st.underflow(start, n, msg)
			return cleanEnd(err)
		}
		st.message(start, msg, nil)
		_, _ = st.r.Discard(n)
		st.off += int64(n)
	}
}

// errBadLength marks a frame whose MSGLEN is not a number followed by a space.
var errBadLength = errors.New("expecting a MSGLEN")

// msgLen reads MSGLEN and the space after it; first is its first byte, already read.
func (st *stream) msgLen(first byte, maxLen int) (int, error) {
	if first < '1' || first > '9' {
		return 0, fmt.Errorf("found %q, %w", first, errBadLength)
	}
	n := int(first - '0')
	for {
		b, err := st.r.ReadByte()
		if err != nil {
			return 0, err
		}
		st.off++
		switch {
		case b >= '0' && b <= '9':
			if n > maxLen*10 {
				return 0, fmt.Errorf("MSGLEN beyond %d: %w", maxLen, errBadLength)
			}
			n = n*10 + int(b-'0')
		case b == ' ':
			return n, nil
		default:
			return 0, fmt.Errorf("found %q after %d, %w followed by a space", b, n, errBadLength)
		}
	}
}

// underflow handles a connection that ended inside a message: with best_effort what
// arrived is parsed, as in Telegraf; either way the short frame is reported.
func (st *stream) underflow(off int64, n int, got []byte) {
	short := fmt.Errorf("found EOF after %q, expecting a SYSLOGMSG containing %d octets", got, n)
	if st.d.s.BestEffort && len(got) > 0 {
		st.message(off, got, short)
		return
	}
	st.d.s.c.malformed.Incr()
	st.framing(off, short)
}

// skipLine discards up to and including the next line feed.
func (st *stream) skipLine() error {
	for {
		b, err := st.r.ReadSlice('\n')
		st.off += int64(len(b))
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// nonTransparent reads messages that each end with the trailer (RFC 6587 3.4.2) until the
// connection ends, and returns why it ended (nil at a clean end). As in go-syslog, a
// trailer followed by anything but '<', the start of the next message, is part of the
// message (a multi-line message); a message whose trailer is the last byte received so far
// is handed on at once rather than held until the next one arrives. Empty lines are
// skipped.
func (st *stream) nonTransparent(trailer byte) error {
	var pending []byte // a message read in several pieces
	start, over := st.off, false
	for {
		chunk, err := st.r.ReadSlice(trailer)
		st.off += int64(len(chunk))
		if len(pending)+len(chunk) > maxNonTransparent {
			over, pending = true, pending[:0]
		} else if !over && (len(pending) > 0 || errors.Is(err, bufio.ErrBufferFull) || st.continues(err)) {
			pending = append(pending, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) || (err == nil && st.continues(err)) {
			continue
		}
		msg := chunk
		if len(pending) > 0 {
			msg = pending
		}
		switch {
		case over:
			st.framing(start, fmt.Errorf("message longer than %d bytes without a trailer", maxNonTransparent))
		case err == nil:
			st.frame(start, msg[:len(msg)-1])
		default:
			st.frame(start, msg) // the connection ended without a trailer
		}
		if err != nil {
			return cleanEnd(err)
		}
		pending, start, over = pending[:0], st.off, false
	}
}

// continues reports whether the message read so far goes on past its trailer: the next
// byte has arrived and is not '<'.
func (st *stream) continues(err error) bool {
	if err != nil || st.r.Buffered() == 0 {
		return false
	}
	next, _ := st.r.Peek(1)
	return next[0] != '<'
}

// frame decodes a non-transparent message, skipping the empty lines before it.
func (st *stream) frame(off int64, msg []byte) {
	for len(msg) > 0 && (msg[0] == '\n' || msg[0] == '\r' || msg[0] == 0) {
		msg, off = msg[1:], off+1
	}
	if len(msg) > 0 {
		st.message(off, msg, nil)
	}
}

// cleanEnd turns the end of the connection into nil.
func cleanEnd(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
