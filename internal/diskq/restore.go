package diskq

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Restore is what a check found when the queue's directory, or files of the queue in it,
// were removed or replaced while the queue had them open: an rm -rf, a systemd-tmpfiles
// cleanup, an operator's mistake. The queue holds each of its files open, so their data is
// still there: it recreates the directory (0700), takes the lock in it again, and writes
// every missing file back (0600) from its open descriptor, the position and leases from
// memory. A restart then finds every unacknowledged item, those in flight and leased
// included, as if nothing had happened.
type Restore struct {
	Dir   string
	Cause string   // "directory removed", "directory replaced" or "files removed"
	Files []string // the files this attempt wrote back
	// Items is how many unacknowledged items the queue holds, in flight and leased ones
	// included: what a restart finds once Err is nil.
	Items int64
	// Attempt counts the checks that tried to write the files back, 1 for the first. Err
	// is nil once everything is back; otherwise each later check tries again, and Close
	// reports the items of what is still missing to OnCorrupt, as lost.
	Attempt int
	Err     error
}

// Check looks whether the directory and the queue's files are still in place, and writes
// back what was removed, telling Options.OnRestore. Sync, the sync goroutine (under every
// policy but SyncManual), each new segment and Close check too.
func (q *Queue) Check() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.checkDir()
	}
}

// checkDir is Check with the lock held. It costs a stat of the directory and two per file.
func (q *Queue) checkDir() {
	cause := q.missing()
	if cause == "" && q.restores == 0 {
		return
	}
	if q.restores == 0 {
		q.restoreCause = cause
	}
	files, err := q.restore()
	q.restores++
	r := Restore{Dir: q.dir, Cause: q.restoreCause, Files: files, Items: q.heldItems(),
		Attempt: q.restores, Err: err}
	if err == nil {
		q.restores = 0
	}
	if q.opts.OnRestore != nil {
		q.opts.OnRestore(r)
	}
}

// missing says what is no longer in place, "" when everything is.
func (q *Queue) missing() string {
	st, err := os.Stat(q.dir)
	switch {
	case gone(err):
		return "directory removed"
	case err != nil:
		return "" // cannot tell; a failing disk shows in the writes
	case !os.SameFile(st, q.dirInfo):
		return "directory replaced"
	}
	for _, o := range q.owned() {
		if !q.inPlace(o.name, o.f) {
			return "files removed"
		}
	}
	return ""
}

func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

type ownedFile struct {
	name string
	f    *os.File
}

// owned lists the files the queue holds open, each under the name it should have.
func (q *Queue) owned() []ownedFile {
	files := []ownedFile{{lockName, q.lockFile}, {positionName, q.posf.f}}
	for _, s := range q.segs {
		files = append(files, ownedFile{segmentName(s.id), s.f})
	}
	for _, l := range q.allLeases() {
		files = append(files, ownedFile{leaseName(l.id), l.f})
	}
	return files
}

func (q *Queue) allLeases() []*Lease {
	ls := make([]*Lease, 0, len(q.leases)+len(q.pending))
	for l := range q.leases {
		ls = append(ls, l)
	}
	return append(ls, q.pending...)
}

// inPlace reports whether name in the directory is the file f (or exists, for a nil f). It
// says yes when it cannot tell, so that a check never rewrites on a mere I/O error.
func (q *Queue) inPlace(name string, f *os.File) bool {
	ni, err := os.Stat(q.path(name))
	if err != nil {
		return !gone(err)
	}
	if f == nil {
		return true
	}
	fi, err := f.Stat()
	return err != nil || os.SameFile(fi, ni)
}

// restore recreates the directory, takes its lock, and writes back every file not in
// place. A file that cannot be written back is left for the next check; the others are
// written all the same.
func (q *Queue) restore() ([]string, error) {
	if err := os.MkdirAll(q.dir, 0o700); err != nil {
		return nil, fmt.Errorf("diskq: recreate %s: %w", q.dir, err)
	}
	info, err := os.Stat(q.dir)
	if err != nil {
		return nil, fmt.Errorf("diskq: %w", err)
	}
	q.dirInfo = info
	if !q.inPlace(lockName, q.lockFile) {
		// Written back under another process's lock, the files would be shared.
		lock, err := lockDir(q.dir)
		if err != nil {
			return nil, err
		}
		q.lockFile.Close()
		q.lockFile = lock
	}
	var files []string
	var errs []error
	done := func(name string, err error) {
		if err != nil {
			errs = append(errs, err)
		} else {
			files = append(files, name)
		}
	}
	for _, s := range q.segs {
		if name := segmentName(s.id); !q.inPlace(name, s.f) {
			done(name, q.writeBackSegment(s))
		}
	}
	if !q.inPlace(positionName, q.posf.f) {
		done(positionName, q.writeBackPosition())
	}
	for _, l := range q.allLeases() {
		if name := leaseName(l.id); l.f != nil && !q.inPlace(name, l.f) {
			done(name, q.writeBackLease(l))
		}
	}
	if len(files) > 0 {
		errs = append(errs, q.dirChanged())
	}
	return files, errors.Join(errs...)
}

// writeBackSegment writes the segment back, whole, from its open file, so that every offset
// the queue holds stays true.
func (q *Queue) writeBackSegment(s *segment) error {
	old, err := q.file(s)
	if err != nil {
		return err
	}
	nf, err := q.rewrite(segmentName(s.id), func(f *os.File) error {
		_, err := io.Copy(f, io.NewSectionReader(old, 0, s.size))
		return err
	})
	if err != nil {
		return err
	}
	if q.winSeg == s {
		q.invalidateWindow()
	}
	s.f = q.swapFile(old, nf)
	return nil
}

func (q *Queue) writeBackPosition() error {
	pf := &positionFile{gen: q.posf.gen}
	nf, err := q.rewrite(positionName, func(f *os.File) error {
		pf.f = f
		// The head's number and the claim too, or the next Open could not count damage
		// exactly (count.go).
		return pf.write(position{seg: q.head.seg, off: q.head.off, skip: q.head.skip,
			num: q.head.num, claim: q.nextNum})
	})
	if err != nil {
		return err
	}
	q.posf.f.Close()
	q.posf.f, q.posf.gen = nf, pf.gen
	q.claimed = q.nextNum
	return nil
}

// writeBackLease writes a lease back from the records it holds in memory.
func (q *Queue) writeBackLease(l *Lease) error {
	nf, err := q.rewrite(leaseName(l.id), func(f *os.File) error {
		_, err := f.WriteAt(l.data, 0)
		return err
	})
	if err != nil {
		return err
	}
	l.f = q.swapFile(l.f, nf)
	return nil
}

// restoreSuffix ends the temporary name of a file being written back.
const restoreSuffix = ".restore"

// rewrite writes a file under a temporary name (which Open ignores) and renames it into
// place, so that a crash meanwhile never leaves a partial file under the real name.
func (q *Queue) rewrite(name string, fill func(*os.File) error) (*os.File, error) {
	tmp := q.path(name + restoreSuffix)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("diskq: write back %s: %w", name, noSpace(err))
	}
	err = fill(f)
	if err == nil && q.opts.Sync != SyncNever {
		err = q.fsyncFile(f)
	}
	if err == nil {
		err = os.Rename(tmp, q.path(name))
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("diskq: write back %s: %w", name, noSpace(err))
	}
	return f, nil
}

// swapFile puts nf where old was, in the files still to sync too, and closes old.
func (q *Queue) swapFile(old, nf *os.File) *os.File {
	for i, u := range q.unsynced {
		if u == old {
			q.unsynced[i] = nf
		}
	}
	old.Close()
	return nf
}

// heldItems is every unacknowledged item: to read, in flight, and in leases.
func (q *Queue) heldItems() int64 {
	n := int64(q.lenLocked())
	for _, b := range q.busy {
		if !b.acked {
			n += b.end.seq - b.start.seq
		}
	}
	for l := range q.leases {
		n += int64(l.items)
	}
	return n
}

// closeCheck is the last check, from Close: what is still missing then is lost to the next
// start, so its items go to OnCorrupt rather than vanish without a word.
func (q *Queue) closeCheck() {
	q.checkDir()
	if q.restores == 0 || q.opts.OnCorrupt == nil {
		return
	}
	for _, s := range q.segs {
		if name := segmentName(s.id); !q.inPlace(name, s.f) {
			items := s.firstSeq + s.items - max(s.firstSeq, q.head.seq)
			q.opts.OnCorrupt(Corruption{File: name, Bytes: s.size, Items: max(0, items)})
		}
	}
	for _, l := range q.allLeases() {
		if name := leaseName(l.id); !q.inPlace(name, l.f) {
			q.opts.OnCorrupt(Corruption{File: name, Bytes: int64(len(l.data)), Items: int64(l.items)})
		}
	}
}
