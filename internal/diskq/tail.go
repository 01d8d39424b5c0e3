package diskq

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Lease holds records popped from the tail by PopTail. They are off the queue's segments and
// in a lease file of their own until AckLease deletes it or ReleaseLease puts them back at
// the tail. A lease file left by a crash goes back at the tail on Open.
type Lease struct {
	id    uint64
	f     *os.File
	data  []byte // the records, as on disk
	items int
}

// Items is the number of items the lease holds.
func (l *Lease) Items() int { return l.items }

// Records returns the lease's records, oldest first. Their payloads stay valid as long as
// the lease.
func (l *Lease) Records() []Record {
	var recs []Record
	for off := 0; off+overhead <= len(l.data); {
		h, _ := parseHeader(l.data[off:])
		end := off + int(h.size())
		recs = append(recs, Record{Items: int(h.items), To: int(h.items), Time: h.time,
			Payload: l.data[off+h.hsize : end-trailerSize]})
		off = end
	}
	return recs
}

func (l *Lease) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// appendRecord appends a whole record to dst, its first item numbered num. A lease's
// records are numbered again when they go back to a segment (writeRecords).
func appendRecord(dst []byte, items int, t, num int64, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, headerSize)...)
	dst = append(dst, payload...)
	dst = append(dst, 0, 0, 0, 0)
	putHeader(dst[start:], items, t, num, payload)
	putTrailer(dst[len(dst)-trailerSize:], len(payload), headerSize)
	return dst
}

// writeRecords numbers whole records of the current format from q.nextNum on, in place,
// and writes them at the tail.
func (q *Queue) writeRecords(recs []byte, items int) error {
	num := q.nextNum
	for off := 0; off+overhead <= len(recs); {
		h, _ := parseHeader(recs[off:])
		renumber(recs[off:], num)
		num += int64(h.items)
		off += int(h.size())
	}
	return q.write(recs, items)
}

// pick is a record PopTail takes some or all of: the newest take items, keeping keep.
type pick struct {
	seg        *segment
	f          found
	take, keep int
	prefix     int    // length of the kept items' payload, when keep > 0
	suffix     []byte // payload of the taken items, when keep > 0
}

// PopTail takes up to max of the newest items not handed out, oldest first, into a lease.
// It returns a nil lease when there are none. Leases that ReleaseLease could not put back
// come first. It fails with ErrNoSpace when the lease file cannot be written; the queue is
// then unchanged, and Read still works.
func (q *Queue) PopTail(max int) (*Lease, []Record, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, nil, ErrClosed
	}
	if n := len(q.pending); n > 0 && q.pending[n-1].items <= max {
		l := q.pending[n-1]
		q.pending = q.pending[:n-1]
		q.leases[l] = struct{}{}
		return l, l.Records(), nil
	}
	for {
		picks, err := q.pickTail(max)
		if errors.Is(err, errShifted) {
			continue
		}
		if err != nil || len(picks) == 0 {
			return nil, nil, err
		}
		l, err := q.lease(picks)
		if err != nil {
			return nil, nil, err
		}
		if err := q.cutTail(picks); err != nil {
			return l, l.Records(), err
		}
		return l, l.Records(), nil
	}
}

// pickTail walks back from the tail, choosing the records to take, newest first.
func (q *Queue) pickTail(limit int) ([]pick, error) {
	q.skipBusy()
	// Spans read from the head may lie past the cursor, once an older one went back
	// (Unread): in flight, or acknowledged but not yet behind the head. The tail is taken
	// from after the newest of them only, or their items would be handed out twice.
	lower := q.cursor.seq
	if n := len(q.busy); n > 0 {
		lower = max(lower, q.busy[n-1].end.seq)
	}
	endSeq := q.tailSeq
	si := len(q.segs) - 1
	end := q.segs[si].size
	var picks []pick
	for need := limit; need > 0 && endSeq > lower; {
		s := q.segs[si]
		if r, ok := badEndingAt(s, end); ok {
			end = r.off
			continue
		}
		if end == 0 || s.id == q.cursor.seg && end <= q.cursor.off {
			if si == 0 || s.id == q.cursor.seg {
				break
			}
			si--
			end = q.segs[si].size
			continue
		}
		f, err := q.recordBefore(s, end)
		if err != nil {
			return nil, err
		}
		items := int64(f.h.items)
		consumed := max(0, lower-(endSeq-items))
		take := min(items-consumed, int64(need))
		p := pick{seg: s, f: f, take: int(take), keep: int(items - take)}
		if p.keep > 0 {
			if q.opts.Split == nil {
				break // whole records only
			}
			if p.prefix, p.suffix, err = q.opts.Split(f.payload, int(items), p.keep); err != nil {
				if len(picks) > 0 {
					break // the newer records make a lease of their own
				}
				return nil, fmt.Errorf("diskq: split: %w", err)
			}
		}
		picks = append(picks, p)
		need -= int(take)
		endSeq -= take
		end = f.off
	}
	return picks, nil
}

func badEndingAt(s *segment, end int64) (region, bool) {
	for _, r := range s.bad {
		if r.end == end {
			return r, true
		}
	}
	return region{}, false
}

// recordBefore returns the record of s that ends at end, found through its trailer, or by
// scanning the segment when the trailer does not lead to a valid record.
func (q *Queue) recordBefore(s *segment, end int64) (found, error) {
	f, err := q.file(s)
	if err != nil {
		return found{}, err
	}
	if end >= minRecord {
		var tr [trailerSize]byte
		if _, err := f.ReadAt(tr[:], end-trailerSize); err != nil {
			return found{}, fmt.Errorf("diskq: %w", err)
		}
		n, hsize := parseTrailer(tr[:])
		if start := end - int64(hsize) - trailerSize - n; n <= MaxPayload && start >= 0 {
			buf := make([]byte, int64(hsize)+trailerSize+n)
			if _, err := f.ReadAt(buf, start); err != nil {
				return found{}, fmt.Errorf("diskq: %w", err)
			}
			h, ok := parseHeader(buf)
			payload := buf[hsize : int64(hsize)+n]
			if ok && h.hsize == hsize && int64(h.length) == n && h.valid(payload) {
				return found{off: start, end: end, h: h, payload: payload, ok: true}, nil
			}
		}
	}
	return q.recordBeforeByScan(s, f, end)
}

// recordBeforeByScan scans s forward from where reading may start to find the record ending
// at end. Damage it finds that was not known is handled as Read handles it.
func (q *Queue) recordBeforeByScan(s *segment, f *os.File, end int64) (found, error) {
	from := pos{seg: s.id, seq: s.firstSeq}
	if s.id == q.cursor.seg {
		from = q.cursor
	}
	sc := scanner{w: newWindow(f, s.size), off: from.off}
	for {
		r, err := sc.next()
		if errors.Is(err, io.EOF) {
			return found{}, fmt.Errorf("diskq: no record ends at %d of %s", end, segmentName(s.id))
		}
		if err != nil {
			return found{}, err
		}
		if !r.ok && !isKnownBad(s, r.off) {
			if err := q.damaged(s, from); err != nil {
				return found{}, err
			}
			return found{}, errShifted
		}
		if r.ok && r.end == end {
			r.payload = append([]byte(nil), r.payload...)
			return r, nil
		}
	}
}

func isKnownBad(s *segment, off int64) bool {
	for _, r := range s.bad {
		if r.off == off {
			return true
		}
	}
	return false
}

// lease writes the picked items to a new lease file.
func (q *Queue) lease(picks []pick) (*Lease, error) {
	l := &Lease{id: q.nextLease}
	q.nextLease++
	for i := len(picks) - 1; i >= 0; i-- {
		p := picks[i]
		payload := p.f.payload
		if p.keep > 0 {
			payload = p.suffix
		}
		l.data = appendRecord(l.data, p.take, p.f.h.time, 0, payload)
		l.items += p.take
	}
	f, err := os.OpenFile(q.path(leaseName(l.id)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("diskq: lease: %w", noSpace(err))
	}
	if _, err := f.WriteAt(l.data, 0); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("diskq: lease: %w", noSpace(err))
	}
	l.f = f
	q.markUnsynced(f)
	q.dirDirty = true
	q.leases[l] = struct{}{}
	return l, nil
}

// cutTail removes the picked items from the segments: whole segments are deleted, the
// oldest picked record is cut off, or trimmed to the items it keeps. The lease file is
// written first, so a crash in between duplicates the lease's items, never loses them.
func (q *Queue) cutTail(picks []pick) error {
	oldest := picks[len(picks)-1]
	s := oldest.seg
	if n := oldest.f.h.num; n >= 0 {
		// The claim goes down first: a crash after the cut must not count what the lease
		// holds as lost from the end. A crash before it leaves the records and the lease.
		old := q.nextNum
		q.nextNum = n + int64(oldest.keep)
		if err := q.claim(); err != nil {
			q.nextNum = old
			return err
		}
	}
	for q.tail() != s {
		if err := q.removeSegment(len(q.segs) - 1); err != nil {
			return err
		}
	}
	f, err := q.file(s)
	if err != nil {
		return err
	}
	q.invalidateWindow()
	q.headTimeOK = false
	var popped int64
	for _, p := range picks {
		if p.seg == s {
			popped += int64(p.take)
		}
	}
	newSeq := q.tailSeq
	for _, p := range picks {
		newSeq -= int64(p.take)
	}
	consumedAll := q.head.seq == q.cursor.seq && newSeq == q.head.seq && q.head.off == oldest.f.off
	size := oldest.f.off
	if oldest.keep > 0 && !consumedAll {
		size, err = trimRecord(f, oldest)
		if err != nil {
			return err
		}
	} else if err := f.Truncate(size); err != nil {
		return fmt.Errorf("diskq: cut tail: %w", err)
	}
	s.bad = badBefore(s.bad, size)
	s.size = size
	s.items -= popped
	q.tailSeq = newSeq
	q.markUnsynced(f)
	if consumedAll {
		q.head = pos{seg: s.id, off: size, seq: newSeq, num: q.nextNum}
		q.cursor = q.head
		return q.persistHead()
	}
	return nil
}

// trimRecord cuts the record of p down to the items it keeps. The new header goes first: a
// crash after it leaves a valid shorter record followed by the rest of the old one, which
// Open cuts off as a torn tail or, when newer records follow (they were popped too, so the
// lease holds them again), recognises by the old trailer and skips without counting it
// corrupt (trimmedRest); a crash before it leaves the record whole, and the lease a
// duplicate.
func trimRecord(f *os.File, p pick) (int64, error) {
	payload := p.f.payload[:p.prefix]
	rec := appendRecord(nil, p.keep, p.f.h.time, p.f.h.num, payload)
	hsize := headerSize
	if p.f.h.hsize == headerSizeV1 { // the payload stays where it is: the same format
		hsize = headerSizeV1
		rec = slices.Concat(make([]byte, hsize), payload, rec[len(rec)-trailerSize:])
		putHeaderV1(rec, p.keep, p.f.h.time, payload)
		putTrailer(rec[len(rec)-trailerSize:], len(payload), hsize)
	}
	if _, err := f.WriteAt(rec[:hsize], p.f.off); err != nil {
		return 0, fmt.Errorf("diskq: trim: %w", err)
	}
	end := p.f.off + int64(len(rec))
	if _, err := f.WriteAt(rec[len(rec)-trailerSize:], end-trailerSize); err != nil {
		return 0, fmt.Errorf("diskq: trim: %w", err)
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("diskq: trim: %w", err)
	}
	return end, nil
}

func badBefore(bad []region, size int64) []region {
	out := bad[:0]
	for _, r := range bad {
		if r.end <= size {
			out = append(out, r)
		}
	}
	return out
}

// AckLease deletes the lease: its items are gone for good.
func (q *Queue) AckLease(l *Lease) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.leases, l)
	return q.removeLease(l)
}

func (q *Queue) removeLease(l *Lease) error {
	l.close()
	q.dirDirty = true
	if err := os.Remove(q.path(leaseName(l.id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("diskq: %w", err)
	}
	return nil
}

// ReleaseLease puts the lease's records back at the tail, to be popped first again. When
// the disk is full it keeps them in their lease file, hands them out first from PopTail,
// and puts them back after the next Append that succeeds; the error then wraps ErrNoSpace.
func (q *Queue) ReleaseLease(l *Lease) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.leases, l)
	if q.closed {
		return ErrClosed
	}
	if err := q.writeRecords(l.data, l.items); err != nil {
		q.pending = append(q.pending, l)
		return err
	}
	return q.removeLease(l)
}

// retryPending puts released leases back on disk once writes succeed again.
func (q *Queue) retryPending() {
	for len(q.pending) > 0 {
		l := q.pending[0]
		if q.writeRecords(l.data, l.items) != nil {
			return
		}
		q.pending = q.pending[1:]
		_ = q.removeLease(l) // left behind, it would come back on Open as a duplicate
	}
}

// restoreLease puts a lease file left by the last run back at the tail.
func (q *Queue) restoreLease(id uint64, rec *Recovery) error {
	f, err := os.OpenFile(q.path(leaseName(id)), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("diskq: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("diskq: %w", err)
	}
	l := &Lease{id: id, f: f}
	sc := scanner{w: newWindow(f, st.Size())}
	for {
		r, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("diskq: read lease: %w", err)
		}
		switch {
		case r.ok:
			l.data = appendRecord(l.data, int(r.h.items), r.h.time, 0, r.payload)
			l.items += int(r.h.items)
			rec.RestoredLeases++
		case r.end < st.Size():
			// A torn end is a lease that was never completed: its items are still in the
			// segments. Damage before the end is reported like a segment's.
			q.reportCorrupt(leaseName(id), r, &rec.Corrupt)
		}
	}
	if l.items == 0 {
		return q.removeLease(l)
	}
	if err := q.writeRecords(l.data, l.items); err != nil {
		if errors.Is(err, ErrNoSpace) {
			q.pending = append(q.pending, l)
			return nil
		}
		l.close()
		return err
	}
	return q.removeLease(l)
}
