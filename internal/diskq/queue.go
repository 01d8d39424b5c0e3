package diskq

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Errors a caller can recognise with errors.Is.
var (
	// ErrNoSpace wraps a write that failed because the disk, a quota or the file-size limit
	// is full (ENOSPC, EDQUOT, EFBIG). Nothing of the record is left on disk; the caller keeps
	// the items and tries again later, and the queue resumes once space frees.
	ErrNoSpace = errors.New("diskq: no space for the record")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("diskq: queue is closed")
)

// SyncPolicy says when written data is forced to stable storage. A process crash loses
// nothing that write(2) returned for under any policy, since the page cache survives it;
// the policy bounds what a power cut or kernel crash can take.
type SyncPolicy int

const (
	// SyncInterval fsyncs what changed every Options.SyncInterval, from a goroutine the
	// queue owns. It is the default.
	SyncInterval SyncPolicy = iota
	// SyncNever leaves flushing to the kernel, directory changes included.
	SyncNever
	// SyncManual fsyncs only when the caller calls Sync (directory changes still at once).
	SyncManual
)

// Defaults of Options.
const (
	DefaultSegmentBytes = 64 << 20
	DefaultSyncInterval = time.Second
)

// SplitFunc splits a payload of items items after its first n (0 < n < items): prefix is the
// length of the payload's first part, which must be payload[:prefix] exactly and decode on
// its own, and suffix is a payload holding the other items on its own. A queue needs it to
// pop part of a record from the tail.
type SplitFunc func(payload []byte, items, n int) (prefix int, suffix []byte, err error)

// Options configure a Queue. Zero values take the defaults.
type Options struct {
	// SegmentBytes is the size past which a new segment file is started; 64 MiB. A record
	// larger than that gets a segment of its own.
	SegmentBytes int64
	Sync         SyncPolicy
	SyncInterval time.Duration // for SyncInterval; 1s
	// Split lets PopTail take part of a record. Without it PopTail takes whole records only.
	Split SplitFunc
	// OnCorrupt receives every damaged region found, on Open and later, with the queue's
	// lock held: it must not call the queue.
	OnCorrupt func(Corruption)
	// OnRestore receives what each check found when the directory, or a file of the queue
	// in it, was removed or replaced while the queue had it open, and what writing it back
	// did (see Restore), with the queue's lock held: it must not call the queue.
	OnRestore func(Restore)
}

// Corruption is a damaged region of a segment: its records are skipped.
type Corruption struct {
	File   string // the segment's file name
	Offset int64
	Bytes  int64 // 0 for items missing with no damaged bytes (a file cut or gone)
	// Records counts the damaged records whose header is intact. Items is what the region
	// held: exactly, by the item numbers around it, or else what those headers say. Unknown
	// counts regions whose header is unreadable and whose items could not be counted by
	// numbers either (records of format 1, a lost position), so that what they held is
	// unknown.
	Records int
	Items   int64
	Unknown int
}

// Recovery says what Open found and repaired.
type Recovery struct {
	Corrupt Corruption // the sum of every region reported to OnCorrupt on open
	// TornBytes were cut off the end of the newest segment: a write that never completed, or
	// damage at the end, holding TornItems items by its header when that was readable.
	// What they held is reported to OnCorrupt (and in Corrupt) like any damage.
	TornBytes int64
	TornItems int64
	// TrimmedBytes were left of a record that PopTail was trimming when the process
	// stopped: its items are in a lease (RestoredLeases), so they are skipped, not counted
	// as corrupt.
	TrimmedBytes int64
	// PositionLost says that no valid read position was found, so reading starts at the
	// oldest record: what was already delivered may be delivered again.
	PositionLost bool
	// RestoredLeases counts records popped from the tail by the last run and never
	// acknowledged, put back at the tail.
	RestoredLeases int
	Items          int // items held after recovery
}

// Record is one record read from the queue. The read covers its items From up to To.
type Record struct {
	Items    int
	From, To int
	Time     int64
	// Payload is valid until the next call on the queue.
	Payload []byte
}

// Queue is a durable queue of records in segment files under one directory. It is safe for
// concurrent use. See the package documentation for the format and the crash semantics.
type Queue struct {
	dir     string
	dirInfo os.FileInfo // the directory Open opened (or restore made), to notice a new one
	opts    Options

	mu       sync.Mutex
	lockFile *os.File
	posf     *positionFile
	segs     []*segment // oldest first; the last one takes appends
	head     pos        // the oldest unacknowledged item, persisted
	cursor   pos        // the next item to read; everything in [head, cursor) is busy
	busy     []span     // in flight or acknowledged, beyond head, sorted
	tailSeq  int64
	// nextNum is the number the next item written gets (see the record format); claimed is
	// the one the position file last recorded, so that Open can tell what was lost at the
	// end of the newest segment.
	nextNum int64
	claimed int64
	win     *window
	winSeg  *segment
	wbuf    []byte

	leases    map[*Lease]struct{} // popped and not yet settled
	pending   []*Lease            // released but not yet back on disk (the disk was full)
	nextLease uint64

	headTime   int64
	headTimeOK bool

	unsynced []*os.File // files written since the last sync
	posDirty bool
	dirDirty bool
	closed   bool
	// restores counts the failed attempts of the restore under way (restore.go), 0 while
	// the files are in place; restoreCause is what its first check found.
	restores     int
	restoreCause string
	stop         chan struct{}
	done         chan struct{}

	// fsyncDir syncs the directory and fsyncFile a file; tests replace them to watch.
	fsyncDir  func() error
	fsyncFile func(*os.File) error
}

type segment struct {
	id       uint64
	f        *os.File
	size     int64
	items    int64 // items of the valid records counted (from the head's record on)
	firstSeq int64 // sequence number of its first counted item
	bad      []region
}

// region is a damaged part of a segment, skipped when reading.
type region struct{ off, end int64 }

// pos is a position between items: skip items into the record at off of segment seg, seq
// being the number of that item counted since Open, num its number on disk (-1 when its
// record is of format 1, which has none).
type pos struct {
	seg  uint64
	off  int64
	skip int
	seq  int64
	num  int64
}

// span is a contiguous run of items handed out by Read.
type span struct {
	start, end pos
	acked      bool
}

// Span is what one Read handed out, to Ack or Unread.
type Span struct{ s span }

// Items is the number of items the span covers.
func (s Span) Items() int { return int(s.s.end.seq - s.s.start.seq) }

func segmentName(id uint64) string { return fmt.Sprintf("%016x.seg", id) }
func leaseName(id uint64) string   { return fmt.Sprintf("%016x.lease", id) }

func (o Options) withDefaults() Options {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = DefaultSyncInterval
	}
	return o
}

// noSpace wraps err with ErrNoSpace when it says the disk is full.
func noSpace(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

func (q *Queue) tail() *segment { return q.segs[len(q.segs)-1] }

func (q *Queue) segment(id uint64) (*segment, int) {
	for i, s := range q.segs {
		if s.id == id {
			return s, i
		}
	}
	return nil, -1
}

func (q *Queue) path(name string) string { return filepath.Join(q.dir, name) }

// Append writes one record of items items and time t, whose payload encode appends to dst.
// The record is on its way to disk (write(2) returned) when Append returns nil. On failure
// nothing of it stays on disk; a full disk gives an error wrapping ErrNoSpace.
func (q *Queue) Append(items int, t int64, encode func(dst []byte) []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if items < 1 {
		return errors.New("diskq: a record holds at least one item")
	}
	if cap(q.wbuf) < headerSize {
		q.wbuf = make([]byte, 0, 64<<10)
	}
	buf := encode(q.wbuf[:headerSize])
	n := len(buf) - headerSize
	if n > MaxPayload {
		return fmt.Errorf("diskq: payload of %d bytes exceeds %d", n, MaxPayload)
	}
	buf = append(buf, 0, 0, 0, 0)
	putHeader(buf, items, t, q.nextNum, buf[headerSize:headerSize+n])
	putTrailer(buf[len(buf)-trailerSize:], n, headerSize)
	if cap(buf) <= 4<<20 { // keep a reasonable buffer, not the largest ever
		q.wbuf = buf[:0]
	}
	if err := q.write(buf, items); err != nil {
		return err
	}
	q.retryPending()
	return nil
}

// write appends whole records holding items items to the newest segment, starting a new
// segment first when it is full. The records must be numbered from q.nextNum on (Append
// numbers its record, writeRecords renumbers a lease's).
func (q *Queue) write(recs []byte, items int) error {
	t := q.tail()
	if t.size > 0 && t.size+int64(len(recs)) > q.opts.SegmentBytes {
		var err error
		if t, err = q.roll(); err != nil {
			return err
		}
	}
	if _, err := t.f.WriteAt(recs, t.size); err != nil {
		// Leave no partial record behind: a later read must never take it for data. Should
		// the truncate fail too, the next write overwrites the bytes at t.size anyway, and a
		// restart cuts off anything past the last whole record.
		_ = t.f.Truncate(t.size)
		return fmt.Errorf("diskq: write %s: %w", segmentName(t.id), noSpace(err))
	}
	if q.tailSeq == q.head.seq {
		q.headTimeOK = false
	}
	t.size += int64(len(recs))
	t.items += int64(items)
	q.tailSeq += int64(items)
	q.nextNum += int64(items)
	q.markUnsynced(t.f)
	return nil
}

// roll starts a new segment after the newest.
func (q *Queue) roll() (*segment, error) {
	q.checkDir() // a new segment in a directory that is gone would fail, or be lost
	old := q.tail()
	s, err := q.createSegment(old.id + 1)
	if err != nil {
		return nil, err
	}
	s.firstSeq = q.tailSeq
	q.segs = append(q.segs, s)
	return s, nil
}

func (q *Queue) createSegment(id uint64) (*segment, error) {
	f, err := os.OpenFile(q.path(segmentName(id)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("diskq: create segment: %w", noSpace(err))
	}
	if err := q.dirChanged(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &segment{id: id, f: f}, nil
}

// file returns the segment's file, opening it when needed. Every segment's file stays open
// while the queue holds the segment (one descriptor per segment, SegmentBytes each), so
// that a directory removed under the queue can be written back from them (restore.go).
func (q *Queue) file(s *segment) (*os.File, error) {
	if s.f == nil {
		f, err := os.OpenFile(q.path(segmentName(s.id)), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("diskq: %w", err)
		}
		s.f = f
	}
	return s.f, nil
}

// dirChanged makes a created or removed file durable, unless the policy is SyncNever.
func (q *Queue) dirChanged() error {
	if q.opts.Sync == SyncNever {
		return nil
	}
	if err := q.fsyncDir(); err != nil {
		return fmt.Errorf("diskq: sync directory: %w", err)
	}
	return nil
}

func (q *Queue) syncDirectory() error {
	d, err := os.Open(q.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// markUnsynced lists f for the next Sync. Under SyncNever nothing syncs, and the list would
// only grow, by a file per lease and per segment.
func (q *Queue) markUnsynced(f *os.File) {
	if q.opts.Sync == SyncNever {
		return
	}
	for _, u := range q.unsynced {
		if u == f {
			return
		}
	}
	q.unsynced = append(q.unsynced, f)
}

// removeSegment deletes a segment that holds nothing left to read.
func (q *Queue) removeSegment(i int) error {
	s := q.segs[i]
	if s == q.winSeg {
		q.winSeg = nil
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	q.segs = append(q.segs[:i], q.segs[i+1:]...)
	if err := os.Remove(q.path(segmentName(s.id))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("diskq: remove segment: %w", err)
	}
	return q.dirChanged()
}

// Len is the number of items that Read or PopTail can hand out: neither in flight nor
// acknowledged.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lenLocked()
}

func (q *Queue) lenLocked() int {
	n := q.tailSeq - q.head.seq
	for _, s := range q.busy {
		n -= s.end.seq - s.start.seq
	}
	for _, l := range q.pending {
		n += int64(l.items)
	}
	return int(n)
}

// Bytes is the size of the records that hold unacknowledged items, on disk, leases
// included. Segment files also hold consumed records until the head leaves them, which
// this does not count: they take at most one segment more.
func (q *Queue) Bytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.bytesFrom(q.head)
	for l := range q.leases {
		n += int64(len(l.data))
	}
	for _, l := range q.pending {
		n += int64(len(l.data))
	}
	return n
}

// bytesFrom is the size of the records from p's record to the end.
func (q *Queue) bytesFrom(p pos) int64 {
	var n int64
	for _, s := range q.segs {
		switch {
		case s.id == p.seg:
			n += max(0, s.size-p.off)
		case s.id > p.seg:
			n += s.size
		}
	}
	return n
}

// Close stops the sync goroutine, syncs (unless the policy is SyncNever) and closes the
// files. Leases still out stay on disk and come back at the tail on the next Open.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.mu.Unlock()
	if q.stop != nil {
		close(q.stop)
		<-q.done
	}
	// The last check first, so that the claim goes to a position file that is in place.
	q.mu.Lock()
	q.closeCheck()
	errs := []error{q.claim()}
	q.mu.Unlock()
	if q.opts.Sync != SyncNever {
		errs = append(errs, q.Sync())
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range q.segs {
		if s.f != nil {
			errs = append(errs, s.f.Close())
			s.f = nil
		}
	}
	for l := range q.leases {
		l.close()
	}
	for _, l := range q.pending {
		l.close()
	}
	errs = append(errs, q.posf.f.Close(), q.lockFile.Close())
	return errors.Join(errs...)
}
