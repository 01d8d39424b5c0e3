package diskq

import (
	"errors"
	"io"
	"math"
	"slices"
)

// errShifted tells a reader that damage found under it moved the items after it.
var errShifted = errors.New("diskq: items moved")

// Read hands out up to max items from the oldest not yet handed out, calling fn for each
// record they lie in, in order. The items stay in the queue until Ack; Unread hands them out
// again. A span is contiguous, so Read may return fewer than max while more are left; it
// returns an empty span when nothing is.
func (q *Queue) Read(max int, fn func(Record)) (Span, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Span{}, ErrClosed
	}
	s, err := q.read(max, math.MaxInt64, true, fn)
	if s.end.seq > s.start.seq {
		q.insertBusy(s)
	}
	return Span{s}, err
}

// read takes up to max items from the cursor, from records older than before only.
func (q *Queue) read(max int, before int64, payload bool, fn func(Record)) (span, error) {
	q.skipBusy()
	start := q.cursor
	c := q.cursor
	for c.seq-start.seq < int64(max) && c.seq < q.tailSeq {
		if b := q.busyAt(c.seq); b >= 0 && c.seq > start.seq {
			break
		}
		at, f, err := q.recordAt(c, payload)
		if errors.Is(err, errShifted) {
			if c.seq > start.seq {
				break
			}
			start, c = q.cursor, q.cursor
			continue
		}
		if err != nil {
			q.cursor = c
			return span{start: start, end: c}, err
		}
		if f.h.time >= before {
			break
		}
		if c.seq == start.seq {
			start = at // normalised: the record's own segment and offset
		}
		c = at
		take := min(int64(f.h.items)-int64(c.skip), int64(max)-(c.seq-start.seq))
		if next := q.nextBusy(c.seq); next < math.MaxInt64 {
			take = min(take, next-c.seq)
		}
		if fn != nil && take > 0 {
			fn(Record{Items: int(f.h.items), From: c.skip, To: c.skip + int(take), Time: f.h.time, Payload: f.payload})
		}
		c = advance(c, f, int(take))
	}
	q.cursor = c
	return span{start: start, end: c}, nil
}

// advance moves p over n items of the record f that p is in.
func advance(p pos, f found, n int) pos {
	p.seq += int64(n)
	p.skip += n
	p.num = numAt(f, p.skip)
	if p.skip >= int(f.h.items) {
		p.off, p.skip = f.end, 0
	}
	return p
}

// numAt is the number of the item skip items into the record f, -1 when it has none.
func numAt(f found, skip int) int64 {
	if f.h.num < 0 {
		return -1
	}
	return f.h.num + int64(skip)
}

// skipBusy moves the cursor past spans that start at it.
func (q *Queue) skipBusy() {
	for {
		i := q.busyAt(q.cursor.seq)
		if i < 0 {
			return
		}
		q.cursor = q.busy[i].end
	}
}

func (q *Queue) busyAt(seq int64) int {
	for i, b := range q.busy {
		if b.start.seq == seq {
			return i
		}
	}
	return -1
}

// nextBusy is where the first busy span after seq starts.
func (q *Queue) nextBusy(seq int64) int64 {
	for _, b := range q.busy {
		if b.start.seq > seq {
			return b.start.seq
		}
	}
	return math.MaxInt64
}

func (q *Queue) insertBusy(s span) {
	i, _ := slices.BinarySearchFunc(q.busy, s.start.seq, func(b span, seq int64) int {
		return int(min(max(b.start.seq-seq, -1), 1))
	})
	q.busy = slices.Insert(q.busy, i, s)
}

// recordAt returns the record that holds the item at c, and c placed on it: past damaged
// regions and segment ends. It reports io.EOF at the end of the queue.
func (q *Queue) recordAt(c pos, payload bool) (pos, found, error) {
	for {
		s, i := q.segment(c.seg)
		if s == nil {
			return c, found{}, io.EOF
		}
		for _, r := range s.bad {
			if c.off >= r.off && c.off < r.end {
				c.off, c.skip = r.end, 0
			}
		}
		if c.off >= s.size {
			if i == len(q.segs)-1 {
				return c, found{}, io.EOF
			}
			c = pos{seg: q.segs[i+1].id, seq: c.seq, num: c.num}
			continue
		}
		f, err := q.readRecord(s, c.off, payload)
		if err != nil {
			return c, found{}, err
		}
		if f.ok {
			c.num = numAt(f, c.skip)
			return c, f, nil
		}
		if err := q.damaged(s, c); err != nil {
			return c, found{}, err
		}
		return c, found{}, errShifted
	}
}

// readRecord reads the record at off of s. Without payload it trusts an intact header,
// which is enough to count and skip items.
func (q *Queue) readRecord(s *segment, off int64, payload bool) (found, error) {
	if q.winSeg != s {
		q.winSeg = nil
		f, err := q.file(s)
		if err != nil {
			return found{}, err
		}
		q.win.reset(f, s.size)
		q.winSeg = s
	}
	q.win.size = s.size
	if !payload {
		b, err := q.win.bytes(off, headerSize)
		if err != nil {
			return found{}, err
		}
		if h, ok := parseHeader(b); ok && off+h.size() <= s.size {
			return found{off: off, end: off + h.size(), h: h, ok: true}, nil
		}
	}
	sc := scanner{w: q.win, off: off}
	f, err := sc.next()
	if errors.Is(err, io.EOF) {
		return found{}, io.ErrUnexpectedEOF
	}
	return f, err
}

// invalidateWindow drops what the read window holds, after records changed in place.
func (q *Queue) invalidateWindow() {
	q.win.reset(nil, 0)
	q.winSeg = nil
}

// damaged handles damage found after Open, at c in s: it scans the rest of the segment,
// records every damaged region, reports how many items were lost, and moves the sequence
// numbers of everything after c down by that much.
func (q *Queue) damaged(s *segment, c pos) error {
	f, err := q.file(s)
	if err != nil {
		return err
	}
	sc := scanner{w: newWindow(f, s.size), off: c.off}
	var counted int64
	var regions []region
	var bytes int64
	for {
		r, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch {
		case r.ok && r.off == c.off:
			counted += int64(r.h.items) - int64(c.skip)
		case r.ok:
			counted += int64(r.h.items)
		default:
			regions = append(regions, region{off: r.off, end: r.end})
			bytes += r.end - r.off
		}
	}
	expected := s.firstSeq + s.items - c.seq
	lost := max(0, expected-counted)
	s.bad = append(slices.DeleteFunc(s.bad, func(r region) bool { return r.off >= c.off }), regions...)
	q.shift(s, c.seq, lost)
	q.invalidateWindow()
	if q.opts.OnCorrupt != nil && len(regions) > 0 {
		q.opts.OnCorrupt(Corruption{File: segmentName(s.id), Offset: regions[0].off, Bytes: bytes,
			Records: len(regions), Items: lost})
	}
	return nil
}

// shift forgets lost items that came after seq in s.
func (q *Queue) shift(s *segment, seq, lost int64) {
	if lost == 0 {
		return
	}
	s.items -= lost
	q.tailSeq -= lost
	for _, o := range q.segs {
		if o.id > s.id {
			o.firstSeq -= lost
		}
	}
	for i := range q.busy {
		b := &q.busy[i]
		if b.start.seq > seq {
			b.start.seq = max(seq, b.start.seq-lost)
			b.end.seq = max(b.start.seq, b.end.seq-lost)
		}
	}
}

// Ack removes the span's items from the queue for good. The read position is persisted once
// every older item is acknowledged too; until then a restart hands the span out again.
func (q *Queue) Ack(sp Span) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	i := q.findBusy(sp.s)
	if i < 0 {
		return errors.New("diskq: Ack of a span not in flight")
	}
	q.busy[i].acked = true
	return q.advanceHead()
}

// Unread hands the span's items out again, before anything newer.
func (q *Queue) Unread(sp Span) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := q.findBusy(sp.s)
	if i < 0 {
		return
	}
	q.busy = slices.Delete(q.busy, i, i+1)
	if sp.s.start.seq < q.cursor.seq {
		q.cursor = sp.s.start
	}
}

func (q *Queue) findBusy(s span) int {
	for i, b := range q.busy {
		if b.start.seq == s.start.seq && !b.acked {
			return i
		}
	}
	return -1
}

// advanceHead moves the head over the acknowledged spans that start at it, persists it and
// removes the segments it has left.
func (q *Queue) advanceHead() error {
	moved := false
	for len(q.busy) > 0 && q.busy[0].acked && q.busy[0].start.seq <= q.head.seq {
		q.head = q.busy[0].end
		q.busy = q.busy[1:]
		moved = true
	}
	if !moved {
		return nil
	}
	if q.cursor.seq <= q.head.seq {
		q.cursor = q.head
	}
	return q.settleHead()
}

// settleHead persists a head that moved, deletes the segments before it and, when the queue
// is empty, starts the newest segment over so that the disk does not keep what was read.
func (q *Queue) settleHead() error {
	// A head at the end of a full segment belongs to the next one, and one at a damaged
	// region (reported when found) after it: else the next Open reports it again.
	for {
		s, i := q.segment(q.head.seg)
		if s == nil {
			break
		}
		if r, ok := badAt(s, q.head.off); ok && q.head.skip == 0 {
			q.head.off = r.end
			continue
		}
		if i == len(q.segs)-1 || q.head.off < s.size {
			break
		}
		q.head = pos{seg: q.segs[i+1].id, seq: q.head.seq, num: q.head.num}
	}
	if q.cursor.seq == q.head.seq {
		q.cursor = q.head
	}
	empty := q.head.seq == q.tailSeq && len(q.busy) == 0
	t := q.tail()
	if empty && q.head.seg == t.id && t.size >= resetBytes {
		// Cut first: a crash before the position is written leaves a position past the end,
		// which Open places at the end.
		if err := t.f.Truncate(0); err != nil {
			return err
		}
		q.invalidateWindow()
		t.size, t.items, t.firstSeq, t.bad = 0, 0, q.tailSeq, nil
		q.head = pos{seg: t.id, seq: q.tailSeq, num: q.nextNum}
		q.cursor = q.head
	}
	if err := q.persistHead(); err != nil {
		return err
	}
	for len(q.segs) > 1 && q.segs[0].id < q.head.seg {
		if err := q.removeSegment(0); err != nil {
			return err
		}
	}
	return nil
}

// badAt returns the damaged region of s that off lies in.
func badAt(s *segment, off int64) (region, bool) {
	for _, r := range s.bad {
		if off >= r.off && off < r.end {
			return r, true
		}
	}
	return region{}, false
}

// resetBytes is how big the newest segment must be for an empty queue to start it over.
const resetBytes = 1 << 20

// Drop removes up to max items from the oldest not handed out, from records older than
// before only (math.MaxInt64 for any), as if read and acknowledged at once; it returns how
// many. fn, when not nil, gets the records as Read would give them.
func (q *Queue) Drop(max int, before int64, fn func(Record)) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, ErrClosed
	}
	return q.drop(max, before, fn)
}

func (q *Queue) drop(max int, before int64, fn func(Record)) (int, error) {
	s, err := q.read(max, before, fn != nil, fn)
	n := int(s.end.seq - s.start.seq)
	if n == 0 {
		return 0, err
	}
	s.acked = true
	q.insertBusy(s)
	return n, errors.Join(err, q.advanceHead())
}

// DropBytes drops whole records from the oldest not handed out until the records not
// handed out take at most limit bytes, and returns how many items it dropped.
func (q *Queue) DropBytes(limit int64, fn func(Record)) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, ErrClosed
	}
	total := 0
	for q.cursor.seq < q.tailSeq && q.bytesFrom(q.cursor) > limit {
		at, f, err := q.recordAt(q.cursor, false)
		if errors.Is(err, errShifted) {
			continue
		}
		if err != nil {
			return total, err
		}
		q.cursor = at
		n, err := q.drop(int(f.h.items)-at.skip, math.MaxInt64, fn)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, nil
}

// PendingBytes is the size of the records holding items not handed out.
func (q *Queue) PendingBytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.skipBusy()
	if q.cursor.seq >= q.tailSeq {
		return 0
	}
	return q.bytesFrom(q.cursor)
}

// OldestTime is the time of the record holding the oldest unacknowledged item, and false
// when the queue holds none.
func (q *Queue) OldestTime() (int64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.head.seq >= q.tailSeq {
		return 0, false
	}
	if !q.headTimeOK {
		_, f, err := q.recordAt(q.head, false)
		if err != nil {
			return 0, false
		}
		q.headTime, q.headTimeOK = f.h.time, true
	}
	return q.headTime, true
}
