//go:build linux

package socketlistener

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/morse-agent/morse"
)

// A sender of datagrams cannot be slowed down: a datagram that finds the socket's receive
// buffer full is lost. On one CPU the goroutine that reads the socket also parses what it
// reads, and while it parses, or while the output serializes and writes on the same CPU,
// nobody empties the socket's buffer, which rmem_max caps at a few MiB. So the reader keeps
// a ring of datagrams in its own memory: between two slices of parsing it moves everything
// the kernel holds into the ring, and parses from the ring. The kernel's buffer is then
// nearly always empty, ready for a burst, and the backlog waits in the ring.
//
// While a healthy output this listener feeds holds a backlog above its high-water mark, the
// reader parses nothing and keeps draining the socket into the ring, so that the datagrams
// wait there instead of being evicted from the output's buffer. When the ring is full, the
// reader stops reading and the kernel's buffer fills behind it; what does not fit there is
// dropped and counted by the kernel (the drops column of /proc/net/udp). Dropping in the
// ring instead would be counted here, but each datagram dropped would first cost a read on
// the CPU that is already short, and the kernel's buffer would no longer add its room to
// the ring's.
const (
	// ringBytes bounds the ring: about 50,000 lines of 165 bytes. Its pages are touched only
	// as far as a backlog reaches, since an empty ring starts again at its beginning.
	ringBytes = 8 << 20
	// ringRecords bounds how many datagrams the ring holds, for its index.
	ringRecords = 1 << 14
	// parseSlice is how many datagrams are parsed between two reads of the socket.
	parseSlice = batchSize
	// holdFor is how long the reader waits for room in a healthy output with a backlog
	// before it drains the socket again.
	holdFor = time.Millisecond
)

// ringRecord places one datagram in the ring: its sender's raw name, then its payload.
type ringRecord struct {
	off, nameLen, size int
}

// datagramRing is a FIFO of datagrams copied back to back into one buffer, so that it costs
// the bytes it holds rather than a 64 KiB buffer a datagram. A datagram never wraps: one
// that does not fit at the end goes to the start, and the end is left unused.
type datagramRing struct {
	buf        []byte
	recs       []ringRecord // circular
	first, n   int          // the oldest record and how many there are
	head, tail int          // the bytes in use begin at head and end at tail, maybe wrapped
}

func newDatagramRing(bytes, records int) *datagramRing {
	return &datagramRing{buf: make([]byte, bytes), recs: make([]ringRecord, records)}
}

// alloc reserves size contiguous bytes, or reports false when the ring has no such room.
func (r *datagramRing) alloc(size int) (int, bool) {
	if r.n == len(r.recs) {
		return 0, false
	}
	if r.n == 0 {
		r.head, r.tail = 0, 0
	}
	off := r.tail
	switch {
	case r.tail >= r.head && len(r.buf)-r.tail >= size: // after the bytes in use
	case r.tail >= r.head && r.head > size: // wrapped to the start, before head
		off = 0
	case r.tail < r.head && r.head-r.tail > size: // between the wrapped end and head
	default:
		return 0, false
	}
	r.tail = off + size
	return off, true
}

// push copies a datagram and its sender's name in, or reports false when there is no room.
func (r *datagramRing) push(name, payload []byte) bool {
	off, ok := r.alloc(len(name) + len(payload))
	if !ok {
		return false
	}
	copy(r.buf[off:], name)
	copy(r.buf[off+len(name):], payload)
	r.recs[(r.first+r.n)%len(r.recs)] = ringRecord{off: off, nameLen: len(name), size: len(payload)}
	r.n++
	return true
}

// front returns the oldest datagram and its sender's name; ok is false when there is none.
func (r *datagramRing) front() (name, payload []byte, ok bool) {
	if r.n == 0 {
		return nil, nil, false
	}
	rec := r.recs[r.first]
	start := rec.off + rec.nameLen
	return r.buf[rec.off:start], r.buf[start : start+rec.size], true
}

// pop frees the oldest datagram. Its bytes may be overwritten by the next push.
func (r *datagramRing) pop() {
	rec := r.recs[r.first]
	r.head = rec.off + rec.nameLen + rec.size
	r.first = (r.first + 1) % len(r.recs)
	r.n--
}

// ringSender names the sender of a datagram in the ring in a log line.
type ringSender []byte

// LogValue implements slog.LogValuer.
func (s ringSender) LogValue() slog.Value {
	a := addrOfName(s)
	if a == nil {
		return slog.StringValue("unnamed socket")
	}
	return slog.StringValue(a.String())
}

// drainAndParse serves a socket on one CPU: it moves every datagram waiting into the ring,
// parses a slice of the ring, and again, waiting on the socket only when the ring is empty.
func (srv *packetServer) drainAndParse(c net.PacketConn) {
	read, poll := batchReader(c), batchPoller(c)
	d := srv.newDatagramParser()
	r := newDatagramRing(ringBytes, ringRecords)
	b := <-srv.free
	next := 0 // the first datagram of b not yet in the ring; b.n when there is none
	for {
		next = srv.fill(r, b, next)
		if next == b.n {
			var n int
			var err error
			if r.n == 0 {
				n, err = read(b)
			} else {
				n, err = poll(b)
			}
			if err != nil {
				if !srv.readFailed(err) {
					parseRing(d, r, r.n) // what was read before the socket closed
					return
				}
				continue
			}
			b.n, next = n, 0
			if n > 0 {
				continue // until the kernel holds nothing more
			}
		}
		if !srv.closing.Load() && !srv.outputsHaveRoom() {
			continue
		}
		parseRing(d, r, parseSlice)
	}
}

// outputsHaveRoom waits up to holdFor while a healthy output this listener feeds holds a
// backlog, and reports whether it made room. A datagram sender cannot be slowed down, but
// its datagrams can wait in the ring and the kernel's buffer rather than make the output
// evict what it holds; the CPU the parser leaves meanwhile is the output's to catch up.
func (srv *packetServer) outputsHaveRoom() bool {
	ctx, cancel := context.WithTimeout(srv.ctx, holdFor)
	defer cancel()
	return morse.WaitForRoom(ctx, srv.acc) == nil
}

// fill moves the datagrams of b from next on into the ring, and returns the first that did
// not fit, b.n when all did. A datagram cut short, or from a sender allowed_sources leaves
// out, is counted, logged and left out, as parseBatch does.
func (srv *packetServer) fill(r *datagramRing, b *batch, next int) int {
	sl := srv.sl
	for ; next < b.n; next++ {
		size := b.sizes[next]
		if size == truncated {
			sl.c.readErr.Incr()
			sl.ioLog.Log(sl.log, slog.LevelWarn, "dropped a datagram larger than the read buffer",
				"from", sender{b, next}, "limit_bytes", len(b.bufs[next]))
			continue
		}
		if len(sl.allowed) > 0 && !sl.sourceAllowed(sender{b, next}.addr()) {
			sl.c.refused.Incr()
			sl.ioLog.Log(sl.log, slog.LevelWarn, "datagram dropped", "from", sender{b, next}, "error", errNotAllowed)
			continue
		}
		if !r.push(b.sys.name(next), b.bufs[next][:size]) {
			return next
		}
	}
	return next
}

// parseRing parses up to max datagrams from the ring and hands their metrics over.
func parseRing(d *datagramParser, r *datagramRing, max int) {
	for range max {
		name, payload, ok := r.front()
		if !ok {
			break
		}
		handleDatagram(d, payload, ringSender(name))
		r.pop()
	}
	d.out.Flush()
}
