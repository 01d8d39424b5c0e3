package batch

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/diskq"
	"github.com/morse-agent/morse/internal/throttle"
)

// PersistentBuffer is a Buffer whose metrics outlive the process, such as DiskBuffer. A
// Writer that closes over one must not count what it still holds as dropped: Close keeps it
// on disk for the next start, and reports (through the Eviction, as morse.ReasonShutdown)
// only what it could not keep.
type PersistentBuffer interface {
	Buffer
	// Close syncs and closes the buffer. Batches still in flight stay in it.
	Close() error
}

// DiskSync chooses when the disk buffer forces its writes to stable storage. A crash of the
// process loses nothing either way; the choice bounds what a power cut can take.
type DiskSync int

const (
	// DiskSyncInterval fsyncs every DiskOptions.SyncInterval (1s). The default.
	DiskSyncInterval DiskSync = iota
	// DiskSyncNever leaves flushing to the kernel.
	DiskSyncNever
)

// DiskOptions configure a DiskBuffer. Zero values take the defaults.
type DiskOptions struct {
	// Dir is the buffer's own directory; each output needs one of its own.
	Dir string
	// MaxBytes bounds the records waiting to be written, on disk; 0 for no bound. Past it
	// the oldest metrics are evicted under morse.ReasonBufferBytes. Segment files also keep
	// what was already read until the head leaves them: at most one segment more.
	MaxBytes int64
	// MaxAge evicts metrics that have waited longer than this in the buffer, under
	// morse.ReasonTooOld; 0 for no bound.
	MaxAge       time.Duration
	Sync         DiskSync
	SyncInterval time.Duration
	// NewestFirst makes Batch take the newest metrics first, so that after an outage the
	// present is written at once and the backlog behind it (buffer_drain = "newest_first").
	NewestFirst bool
	// SegmentBytes is the size of a segment file; 64 MiB, or MaxBytes/16 (at least 1 MiB)
	// when that is smaller, so that finished segments are deleted often enough to keep
	// the files near MaxBytes.
	SegmentBytes int64
	// RetryInterval is how often a disk that refused a write is tried again; 1s.
	RetryInterval time.Duration
	Logger        *slog.Logger
	// Now is the clock, for tests; time.Now if nil.
	Now func() time.Time
}

// Default of DiskOptions.RetryInterval.
const DefaultDiskRetryInterval = time.Second

// DiskBuffer is a Buffer on disk (internal/diskq): every Add and AddBatch writes one record
// before it returns, so a crash of the process loses nothing that was added. Batch reads,
// Accept acknowledges and Reject rewinds. When the disk refuses a write (full, or a
// file-size limit) the metrics are kept in memory within the limit and written once the disk
// takes them again, retried every RetryInterval by the buffer itself; meanwhile the Writer
// holds back the inputs that can wait, and tracked metrics are not done (diskspill.go). One
// bound holds memory and disk together: the limit (count), MaxBytes
// and MaxAge; past any of them the oldest metrics go, each reported to the Eviction under
// its reason. Records found damaged are reported under morse.ReasonCorrupt.
type DiskBuffer struct {
	opts  DiskOptions
	limit int
	ev    Eviction
	q     *diskq.Queue
	log   *slog.Logger
	warn  *throttle.Throttle

	corrupt atomic.Int64 // damaged metrics found, not yet reported

	mu       sync.Mutex
	spill    deque
	retryAt  time.Time
	diskErr  error
	flights  []*diskFlight
	closed   bool
	encodeMs []morse.Metric // the metrics the queue's encode callback writes

	fb fallback // what is held in memory while the disk refuses writes, and who is told
}

// DiskBufferFactory returns a constructor for Options.NewBuffer that builds a DiskBuffer.
func DiskBufferFactory(o DiskOptions) func(limit int, ev Eviction) (Buffer, error) {
	return func(limit int, ev Eviction) (Buffer, error) {
		b, err := NewDiskBuffer(limit, ev, o)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
}

// NewDiskBuffer opens (or creates) the disk buffer in o.Dir, holding up to limit metrics. It
// repairs what a crash or a damaged disk left: what it had to skip is reported to ev under
// morse.ReasonCorrupt before it returns.
func NewDiskBuffer(limit int, ev Eviction, o DiskOptions) (*DiskBuffer, error) {
	if o.Dir == "" {
		return nil, errors.New("disk buffer: no directory")
	}
	o = o.withDefaults()
	b := &DiskBuffer{opts: o, limit: max(limit, 1), ev: ev, log: o.Logger, warn: throttle.New(10 * time.Second)}
	b.fb.warn = throttle.New(time.Minute)
	qo := diskq.Options{
		SegmentBytes: o.SegmentBytes,
		Sync:         diskq.SyncInterval,
		SyncInterval: o.SyncInterval,
		Split:        splitPayload,
		OnCorrupt:    b.onCorrupt,
		OnRestore:    b.restoreLogger(),
	}
	if o.Sync == DiskSyncNever {
		qo.Sync = diskq.SyncNever
	}
	q, rec, err := diskq.Open(o.Dir, qo)
	if err != nil {
		return nil, fmt.Errorf("disk buffer: %w", err)
	}
	b.q = q
	if rec.TornBytes > 0 || rec.PositionLost || rec.RestoredLeases > 0 || rec.Corrupt.Bytes > 0 ||
		rec.TrimmedBytes > 0 {
		b.log.Warn("disk buffer repaired", "dir", o.Dir, "torn_bytes", rec.TornBytes, "trimmed_bytes", rec.TrimmedBytes,
			"position_lost", rec.PositionLost, "restored_records", rec.RestoredLeases,
			"corrupt_bytes", rec.Corrupt.Bytes, "corrupt_records", rec.Corrupt.Records+rec.Corrupt.Unknown)
	}
	b.reportCorrupt()
	b.evictExcess()
	return b, nil
}

func (o DiskOptions) withDefaults() DiskOptions {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = diskq.DefaultSegmentBytes
		if o.MaxBytes > 0 {
			o.SegmentBytes = min(o.SegmentBytes, max(o.MaxBytes/16, 1<<20))
		}
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = diskq.DefaultSyncInterval
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultDiskRetryInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// onCorrupt runs under the queue's lock: it only counts.
func (b *DiskBuffer) onCorrupt(c diskq.Corruption) {
	b.corrupt.Add(c.Items + int64(c.Unknown))
}

func (b *DiskBuffer) reportCorrupt() {
	if n := b.corrupt.Swap(0); n > 0 && b.ev.Report != nil {
		b.ev.Report(morse.ReasonCorrupt, int(n), nil)
	}
}

// Add writes one metric to disk and returns how many the buffer then holds.
func (b *DiskBuffer) Add(m morse.Metric) int {
	ms := [1]morse.Metric{m}
	return b.AddBatch(ms[:])
}

// AddBatch writes the metrics to disk as one record, evicts the oldest past the bounds and
// returns how many the buffer then holds. It keeps no reference to ms. Tracked metrics that
// reach the disk are done, delivered; those kept in memory stay tracked until they reach the
// disk or leave the buffer. After Close (a Write racing the Writer's Close) nothing would
// ever write or report metrics kept in memory, so they are reported as dropped under
// morse.ReasonShutdown instead.
func (b *DiskBuffer) AddBatch(ms []morse.Metric) int {
	if len(ms) > 0 {
		b.mu.Lock()
		closed := b.closed
		stored, done := 0, []morse.Metric(nil)
		if !closed {
			stored, done = b.store(ms, b.opts.Now())
			b.publish()
		}
		b.mu.Unlock()
		if closed {
			if b.ev.keep() {
				ms = slices.Clone(ms)
			}
			b.report(morse.ReasonShutdown, ms, len(ms))
			return b.Len()
		}
		morse.SettleTracked(ms[:stored], true)
		morse.SettleTracked(done, true)
	}
	b.evictExcess()
	b.reportCorrupt()
	return b.Len()
}

// maxRecordMetrics bounds a record, so that a huge AddBatch never makes a huge payload.
const maxRecordMetrics = 1 << 16

// store writes ms to disk, or keeps them in memory while the disk refuses writes. It returns
// how many of ms it wrote, the first ones, and the tracked metrics that it wrote from memory.
// The caller holds the lock, on a buffer that is not closed, and settles them once it has
// released it.
func (b *DiskBuffer) store(ms []morse.Metric, now time.Time) (stored int, done []morse.Metric) {
	if b.spill.len() > 0 && !now.Before(b.retryAt) {
		done = b.unspill(now)
	}
	if b.spill.len() > 0 {
		b.keep(ms, now)
		return 0, done
	}
	for stored < len(ms) {
		chunk := ms[stored:min(len(ms), stored+maxRecordMetrics)]
		if err := b.append(chunk, now.UnixNano()); err != nil {
			b.diskFailed(err, now)
			b.keep(ms[stored:], now)
			return stored, done
		}
		stored += len(chunk)
	}
	b.diskWorks()
	return stored, done
}

func (b *DiskBuffer) append(ms []morse.Metric, at int64) error {
	b.encodeMs = ms
	err := b.q.Append(len(ms), at, b.encode)
	b.encodeMs = nil
	return err
}

func (b *DiskBuffer) encode(dst []byte) []byte { return appendMetrics(dst, b.encodeMs) }

// Len is the number of metrics held, on disk and in memory, not counting batches in flight.
func (b *DiskBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lenLocked()
}

func (b *DiskBuffer) lenLocked() int { return b.q.Len() + b.spill.len() }

// Cap is the most metrics the buffer holds.
func (b *DiskBuffer) Cap() int { return b.limit }

// Bytes is the size on disk of the records holding unwritten metrics, for the buffer_bytes
// self-metric.
func (b *DiskBuffer) Bytes() int64 { return b.q.Bytes() }

// OldestAge is how long the oldest metric held has waited, 0 when there is none.
func (b *DiskBuffer) OldestAge() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	oldest, ok := b.q.OldestTime()
	if b.spill.len() > 0 && (!ok || b.spill.at(0).at < oldest) {
		oldest, ok = b.spill.at(0).at, true
	}
	if !ok {
		return 0
	}
	return max(0, b.opts.Now().Sub(time.Unix(0, oldest)))
}

// Close writes what is kept in memory to disk if it can, and closes the queue. What is on
// disk stays for the next start; what is in memory and cannot be written is reported to the
// Eviction as morse.ReasonShutdown.
func (b *DiskBuffer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	done := b.unspill(b.opts.Now())
	lost := b.spill.popFront(nil, b.spill.len())
	for _, fl := range b.flights {
		lost = append(lost, fl.spill...)
	}
	b.flights = nil
	b.fb.inFlight = 0
	b.stopRetry()
	b.publish()
	b.mu.Unlock()
	morse.SettleTracked(done, true)
	if len(lost) > 0 {
		b.report(morse.ReasonShutdown, metricsOf(nil, lost), len(lost))
	}
	err := b.q.Close() // reports what a removed directory lost, to reportCorrupt
	b.reportCorrupt()
	return err
}

// report hands an eviction to the Eviction, with the metrics only when it asked for them:
// Keep, or a tracked metric buffered, since the metrics held in memory may be tracked.
func (b *DiskBuffer) report(reason string, ms []morse.Metric, n int) {
	if n <= 0 || b.ev.Report == nil {
		return
	}
	if !b.ev.keep() {
		ms = nil
	}
	b.ev.Report(reason, n, ms)
}
