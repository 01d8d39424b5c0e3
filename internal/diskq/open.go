package diskq

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Open opens the queue in dir, creating the directory (0700) and its files (0600) when
// needed. It repairs rather than refuses: a torn record at the end is cut off, damaged
// records elsewhere are skipped and reported, leases of the last run go back at the tail.
// It fails only when the directory cannot be used at all, or another process holds it.
func Open(dir string, opts Options) (*Queue, Recovery, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, Recovery{}, fmt.Errorf("diskq: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, Recovery{}, err
	}
	info, err := os.Stat(dir)
	if err != nil {
		lock.Close()
		return nil, Recovery{}, fmt.Errorf("diskq: %w", err)
	}
	q := &Queue{dir: dir, dirInfo: info, opts: opts, lockFile: lock, leases: map[*Lease]struct{}{}}
	q.fsyncDir = q.syncDirectory
	q.fsyncFile = (*os.File).Sync
	q.win = newWindow(nil, 0)
	rec, err := q.recover()
	if err != nil {
		q.closeFiles()
		return nil, Recovery{}, err
	}
	rec.Items = q.lenLocked()
	if opts.Sync != SyncManual {
		q.stop, q.done = make(chan struct{}), make(chan struct{})
		go q.syncLoop(opts.SyncInterval)
	}
	return q, rec, nil
}

// lockName is the file flock'ed by the queue that owns the directory.
const lockName = "lock"

// lockDir takes an exclusive lock on the directory, so that two processes never share it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("diskq: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("diskq: %s is in use by another process: %w", dir, err)
	}
	return f, nil
}

func (q *Queue) closeFiles() {
	for _, s := range q.segs {
		if s.f != nil {
			s.f.Close()
		}
	}
	if q.posf != nil {
		q.posf.f.Close()
	}
	q.lockFile.Close()
}

// listDir returns the ids of the segment and lease files, in order. It removes what a
// crash in the middle of a write-back left (rewrite's temporary files): the rename that
// would have put one in place never happened, so it is partial and nothing reads it.
func listDir(dir string) (segs, leases []uint64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("diskq: %w", err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), restoreSuffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return nil, nil, fmt.Errorf("diskq: remove a partial write-back: %w", err)
			}
			continue
		}
		name, ext, _ := strings.Cut(e.Name(), ".")
		id, perr := strconv.ParseUint(name, 16, 64)
		switch {
		case perr != nil || len(name) != 16:
		case ext == "seg":
			segs = append(segs, id)
		case ext == "lease":
			leases = append(leases, id)
		}
	}
	slices.Sort(segs)
	slices.Sort(leases)
	return segs, leases, nil
}

func (q *Queue) recover() (Recovery, error) {
	var rec Recovery
	posf, p, ok, err := openPosition(q.dir)
	if err != nil {
		return rec, err
	}
	q.posf = posf
	ids, leaseIDs, err := listDir(q.dir)
	if err != nil {
		return rec, err
	}
	t := newTally(p, ok, &rec)
	if err := q.openSegments(ids, p, ok, &rec); err != nil {
		return rec, err
	}
	for i, s := range q.segs {
		if err := q.scanSegment(s, i == len(q.segs)-1, t); err != nil {
			return rec, err
		}
	}
	q.finish(t)
	q.numberSegments()
	if err := q.persistHead(); err != nil {
		return rec, err
	}
	if len(leaseIDs) > 0 {
		q.nextLease = leaseIDs[len(leaseIDs)-1] + 1
	}
	for _, id := range leaseIDs {
		if err := q.restoreLease(id, &rec); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// openSegments opens the segments still in use, removes those the head has left (a crash
// can leave them behind), and places the head.
func (q *Queue) openSegments(ids []uint64, p position, ok bool, rec *Recovery) error {
	rec.PositionLost = !ok && len(ids) > 0
	if !ok {
		p = position{}
	}
	var keep []uint64
	for _, id := range ids {
		if ok && id < p.seg {
			if err := os.Remove(q.path(segmentName(id))); err != nil {
				return fmt.Errorf("diskq: %w", err)
			}
			continue
		}
		keep = append(keep, id)
	}
	if len(keep) == 0 || keep[0] != p.seg {
		// The head's segment is gone: it was consumed, or never written. Start at the
		// oldest segment there is.
		p = position{seg: max(p.seg, 1)}
		if len(keep) > 0 {
			p.seg = keep[0]
		}
	}
	if len(keep) == 0 {
		s, err := q.createSegment(p.seg)
		if err != nil {
			return err
		}
		q.segs = []*segment{s}
	}
	for _, id := range keep {
		f, err := os.OpenFile(q.path(segmentName(id)), os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("diskq: %w", err)
		}
		q.segs = append(q.segs, &segment{id: id, f: f})
	}
	q.head = pos{seg: p.seg, off: p.off, skip: p.skip, num: -1}
	return nil
}

// scanSegment reads a whole segment, checking every record: it counts the items from the
// head on, records and counts damaged regions (through t), and cuts a torn tail off the
// newest segment.
func (q *Queue) scanSegment(s *segment, newest bool, t *tally) error {
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("diskq: %w", err)
	}
	s.size = st.Size()
	name := segmentName(s.id)
	isHead := s.id == q.head.seg
	sc := scanner{w: newWindow(s.f, s.size)}
	headFound := !isHead
	cut := int64(-1)
	var prev found   // the last valid record
	good := int64(0) // where the last valid record ends, consumed or not
	for {
		f, err := sc.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("diskq: read %s: %w", name, err)
		}
		if f.ok {
			good = f.end
		}
		if isHead && f.end <= q.head.off {
			continue // consumed before the last stop
		}
		if f.ok {
			skip := 0 // what was consumed of it
			if !headFound {
				headFound = true
				q.placeHead(f)
				if q.head.off != f.off { // the head's record was wholly consumed
					t.expect = f.h.end()
					continue
				}
				skip = q.head.skip
			}
			s.items += int64(f.h.items)
			q.intact(t, name, f, skip)
			prev = f
			continue
		}
		if !headFound && f.known && f.off == q.head.off {
			// The head's record: only what was not consumed of it is lost.
			f.h.items = uint32(max(0, int(f.h.items)-q.head.skip))
		}
		if newest && f.end == s.size {
			cut = good
		}
		q.damagedAtOpen(s, sc.w, prev, f, cut, t)
		if cut >= 0 {
			break
		}
	}
	if cut >= 0 {
		if err := s.f.Truncate(cut); err != nil {
			return fmt.Errorf("diskq: cut torn tail: %w", err)
		}
		s.size = cut
	}
	if !headFound { // nothing left to read in the head's segment
		q.head = pos{seg: s.id, off: s.size, num: q.head.num}
	}
	return nil
}

// damagedAtOpen records the damaged region f of s that Open found after the intact record
// prev, to be counted once the next reference is known (tally.settle). Damage that runs to
// the end of the newest segment (cut >= 0: where the intact records end) is what a write
// that never completed leaves, or what was lost of the file's end: it is cut off, with the
// damage right before it, and counted against the claim once every segment is read. The rest
// of a record whose trim a crash interrupted (trimmedRest) holds items that a lease holds
// too: it is skipped, not counted.
func (q *Queue) damagedAtOpen(s *segment, w *window, prev, f found, cut int64, t *tally) {
	rec := t.sum
	rest := trimmedRest(w, prev, f)
	if rest {
		t.expect = -1 // the lease's items are numbered again when it goes back
	}
	switch {
	case cut >= 0:
		rec.TornBytes += f.end - cut
		s.bad = badBefore(s.bad, cut)
		if f.known {
			rec.TornItems += int64(f.h.items)
		}
	case rest:
		s.bad = append(s.bad, region{off: f.off, end: f.end})
		rec.TrimmedBytes += f.end - f.off
	default:
		s.bad = append(s.bad, region{off: f.off, end: f.end})
	}
	if !rest {
		t.group = append(t.group, damage{file: segmentName(s.id), f: f})
	}
}

// trimmedRest reports whether the bad region f is the rest of the record prev, left by a
// crash inside trimRecord: the shortened header was written, the truncate never ran. The
// region then ends with the record's old trailer, whose length leads back to prev's start;
// damage is most unlikely to look so. Its items were written to a lease before the trim,
// which Open puts back, so they are not lost and the region is not reported as corrupt.
func trimmedRest(w *window, prev, f found) bool {
	if !prev.ok || f.known || f.off != prev.end || f.end-f.off < trailerSize {
		return false
	}
	b, err := w.bytes(f.end-trailerSize, trailerSize)
	if err != nil {
		return false
	}
	n, hsize := parseTrailer(b)
	return hsize == prev.h.hsize && n > int64(prev.h.length) && prev.off+int64(hsize)+trailerSize+n == f.end
}

// placeHead fixes the head on the first valid record found from it: the position may point
// into a region damaged since, or past the record's items.
func (q *Queue) placeHead(f found) {
	if q.head.off != f.off {
		q.head.off, q.head.skip = f.off, 0
	}
	if q.head.skip >= int(f.h.items) {
		q.head.off, q.head.skip = f.end, 0
	}
}

// reportCorrupt reports the damaged region f of file by what its header says, or as
// unknown when it has none.
func (q *Queue) reportCorrupt(file string, f found, sum *Corruption) {
	c := Corruption{File: file, Offset: f.off, Bytes: f.end - f.off}
	if f.known {
		c.Records, c.Items = 1, int64(f.h.items)
	} else {
		c.Unknown = 1
	}
	q.report(c, sum)
}

// report hands c to OnCorrupt, and adds it to sum when not nil.
func (q *Queue) report(c Corruption, sum *Corruption) {
	if sum != nil {
		sum.File, sum.Offset = c.File, c.Offset
		sum.Bytes += c.Bytes
		sum.Records += c.Records
		sum.Items += c.Items
		sum.Unknown += c.Unknown
	}
	if q.opts.OnCorrupt != nil {
		q.opts.OnCorrupt(c)
	}
}

// numberSegments gives every item a sequence number: the head's item is 0.
func (q *Queue) numberSegments() {
	seq := int64(0)
	for _, s := range q.segs {
		if s.id == q.head.seg {
			seq = -int64(q.head.skip)
		}
		s.firstSeq = seq
		seq += s.items
	}
	q.tailSeq = seq
	q.head.seq = 0
	q.cursor = q.head
}

// persistHead writes the head position.
func (q *Queue) persistHead() error {
	q.headTimeOK = false
	return q.writePosition()
}
