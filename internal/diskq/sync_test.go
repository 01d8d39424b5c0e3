package diskq

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fsyncs counts, by file name, the fsyncs that succeeded.
type fsyncs struct {
	mu     sync.Mutex
	synced map[string]int
}

func (s *fsyncs) watch(q *Queue) {
	s.synced = map[string]int{}
	q.fsyncFile = func(f *os.File) error {
		err := f.Sync()
		if err == nil {
			s.mu.Lock()
			s.synced[filepath.Base(f.Name())]++
			s.mu.Unlock()
		}
		return err
	}
}

func (s *fsyncs) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced[name]
}

// The last writes to a segment before a new one starts are synced like any other: the
// rotation closes the old segment's file, which must not leave them to the kernel.
func TestSyncCoversSegmentClosedByRotation(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(nil)
	o.SegmentBytes = 300
	q, _ := openQueue(t, dir, o)
	var s fsyncs
	s.watch(q)
	appendRecords(t, q, 0, 4, 4) // 4 records of 4 items, 68 bytes each: one segment
	require.Len(t, segmentFiles(t, dir), 1)
	appendRecords(t, q, 16, 1, 4) // starts the second segment
	require.Len(t, segmentFiles(t, dir), 2)

	require.NoError(t, q.Sync())
	require.Equal(t, 1, s.count(segmentName(1)), "the rotated segment is synced")
	require.Equal(t, 1, s.count(segmentName(2)))
	require.Equal(t, readAll(t, q, 100), seq(0, 20))
}

// A segment read to its end and so closed while it holds unsynced writes is synced too.
func TestSyncCoversSegmentClosedByRead(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(nil)
	o.SegmentBytes = 256
	q, _ := openQueue(t, dir, o)
	var s fsyncs
	s.watch(q)
	appendRecords(t, q, 0, 5, 4)
	_, got := readSome(t, q, 20) // reads across the end of the first segment
	require.Equal(t, seq(0, 20), got)

	require.NoError(t, q.Sync())
	require.Equal(t, 1, s.count(segmentName(1)))
	require.Equal(t, 1, s.count(segmentName(2)))
}

// Under SyncNever nothing is ever synced, so the queue keeps no list of files to sync: it
// would grow by a file per lease and per segment for as long as the process runs.
func TestSyncNeverKeepsNoFilesToSync(t *testing.T) {
	o := testOptions(nil)
	o.Sync = SyncNever
	o.SegmentBytes = 256
	q, _ := openQueue(t, t.TempDir(), o)
	for i := range uint64(10) {
		appendRecords(t, q, 4*i, 1, 4)
		l, _, err := q.PopTail(4)
		require.NoError(t, err)
		require.NoError(t, q.AckLease(l))
	}
	appendRecords(t, q, 40, 10, 4)
	q.mu.Lock()
	defer q.mu.Unlock()
	require.Empty(t, q.unsynced)
}
