package diskq

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// restores collects what a queue reports to OnRestore.
type restores struct {
	mu  sync.Mutex
	all []Restore
}

func (r *restores) add(x Restore) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, x)
}

func (r *restores) list() []Restore {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Restore(nil), r.all...)
}

// busyQueue opens a queue of several segments in dir holding items 0..100, of which 0..12
// are acknowledged, 12..20 in flight (the span returned) and 90..100 leased.
func busyQueue(t *testing.T, dir string, rs *restores, c *corruptions) (*Queue, Span) {
	t.Helper()
	opts := testOptions(c)
	opts.SegmentBytes = 200 // three records of 5 items a segment at most
	opts.OnRestore = rs.add
	q, _ := openQueue(t, dir, opts)
	appendRecords(t, q, 0, 20, 5)
	sp, got := readSome(t, q, 12)
	require.Equal(t, seq(0, 12), got)
	require.NoError(t, q.Ack(sp))
	flight, got := readSome(t, q, 8)
	require.Equal(t, seq(12, 20), got)
	l, _, err := q.PopTail(10)
	require.NoError(t, err)
	require.Equal(t, 10, l.Items())
	require.Greater(t, len(segmentFiles(t, dir)), 3)
	return q, flight
}

// copyDir copies the files of dir, as a crash would leave them to the next start.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600))
	}
	return dst
}

// requireRestored checks the one report, the modes, that the lock is held again, and that
// a start on the files as they are now reads every unacknowledged item in order: the
// leased ones come back at the tail, as after a crash.
func requireRestored(t *testing.T, q *Queue, dir string, rs *restores, cause string, dirMode os.FileMode) {
	t.Helper()
	all := rs.list()
	require.Len(t, all, 1)
	require.Equal(t, cause, all[0].Cause)
	require.NoError(t, all[0].Err)
	require.Equal(t, dir, all[0].Dir)
	require.EqualValues(t, 88, all[0].Items)
	require.Equal(t, 1, all[0].Attempt)

	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, dirMode, st.Mode().Perm(), "a directory made again is 0700; one in place is kept")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}
	_, _, err = Open(dir, testOptions(nil))
	require.ErrorContains(t, err, "in use by another process", "the lock is taken again")

	q.Sync()
	require.Len(t, rs.list(), 1, "the next check finds everything in place")
	q2, rec := openQueue(t, copyDir(t, dir), testOptions(nil))
	require.Equal(t, 88, rec.Items)
	require.Equal(t, append(seq(12, 90), seq(90, 100)...), readAll(t, q2, 7))
}

func TestRestoreRemovedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	q, _ := busyQueue(t, dir, &rs, nil)
	require.NoError(t, os.RemoveAll(dir))
	q.Sync()
	requireRestored(t, q, dir, &rs, "directory removed", 0o700)
}

func TestRestoreRemovedSegments(t *testing.T) {
	dir := t.TempDir()
	var rs restores
	q, _ := busyQueue(t, dir, &rs, nil)
	require.NoError(t, os.Chmod(dir, 0o755))
	for _, f := range segmentFiles(t, dir) {
		require.NoError(t, os.Remove(f))
	}
	q.Sync()
	requireRestored(t, q, dir, &rs, "files removed", 0o755)
}

// TestRestoreReplacedDirectory: the directory is moved away and an empty one made in its
// place, as systemd-tmpfiles or an operator's mv and mkdir would.
func TestRestoreReplacedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	q, _ := busyQueue(t, dir, &rs, nil)
	require.NoError(t, os.Rename(dir, dir+".old"))
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o750))
	q.Sync()
	requireRestored(t, q, dir, &rs, "directory replaced", 0o750)
}

// TestRestoredQueueGoesOn: after a restore the queue reads, writes, starts new segments and
// acknowledges in the new directory, and a restart finds what it should.
func TestRestoredQueueGoesOn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	q, flight := busyQueue(t, dir, &rs, nil)
	require.NoError(t, os.RemoveAll(dir))
	q.Sync()
	appendRecords(t, q, 100, 10, 5)
	require.NoError(t, q.Ack(flight))
	require.Equal(t, append(seq(20, 90), seq(100, 150)...), readAll(t, q, 9))
	require.NoError(t, q.Close())
	q2, rec := openQueue(t, dir, testOptions(nil))
	require.Equal(t, 10, rec.Items, "the lease, never acknowledged")
	require.Equal(t, seq(90, 100), readAll(t, q2, 7))
}

// TestRestoreOnNewSegment: a queue synced by hand notices the removal when it starts a
// segment, rather than failing the write.
func TestRestoreOnNewSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	opts := testOptions(nil)
	opts.SegmentBytes = 200
	opts.OnRestore = rs.add
	q, _ := openQueue(t, dir, opts)
	appendRecords(t, q, 0, 2, 5)
	require.NoError(t, os.RemoveAll(dir))
	appendRecords(t, q, 10, 4, 5)
	require.Len(t, rs.list(), 1)
	require.NoError(t, rs.list()[0].Err)
	q2, _ := openQueue(t, copyDir(t, dir), testOptions(nil))
	require.Equal(t, seq(0, 30), readAll(t, q2, 100))
}

// TestRestoreByTheSyncGoroutine: without syncing (SyncNever), the queue's goroutine still
// checks every SyncInterval.
func TestRestoreByTheSyncGoroutine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	opts := Options{Sync: SyncNever, SyncInterval: 5 * time.Millisecond, OnRestore: rs.add}
	q, _ := openQueue(t, dir, opts)
	appendRecords(t, q, 0, 3, 5)
	require.NoError(t, os.RemoveAll(dir))
	require.Eventually(t, func() bool { return len(rs.list()) > 0 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, q.Close())
	q2, _ := openQueue(t, dir, testOptions(nil))
	require.Equal(t, seq(0, 15), readAll(t, q2, 100))
}

// TestRestoreFailsCounted: when the directory cannot be made again (a file took its name),
// every check says so, and Close reports the items it can no longer keep as lost.
func TestRestoreFailsCounted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	var c corruptions
	q, _ := busyQueue(t, dir, &rs, &c)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, []byte("not a directory"), 0o600))
	q.Sync()
	q.Sync()
	all := rs.list()
	require.Len(t, all, 2)
	require.Error(t, all[0].Err)
	require.Equal(t, "directory replaced", all[1].Cause, "by a file")
	require.Equal(t, 2, all[1].Attempt)
	require.NoError(t, q.Close())
	_, items, _ := c.sum()
	require.EqualValues(t, 88, items, "78 in the segments from the head, 10 leased")
}

// TestRestoredPositionCountsDamage: the position file written back carries the head's number
// and the claim, so damage found at the next start is still counted exactly: here the
// newest segment with records torn inside its last record's header, which only the claim
// can count.
func TestRestoredPositionCountsDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "buffer")
	var rs restores
	q, _ := busyQueue(t, dir, &rs, nil)
	require.NoError(t, os.RemoveAll(dir))
	q.Sync()
	require.Len(t, rs.list(), 1)

	crashed := copyDir(t, dir)
	segs := segmentFiles(t, crashed)
	var newest string
	var offs []int64
	for i := len(segs) - 1; len(offs) == 0; i-- { // PopTail may have emptied the newest
		newest = segs[i]
		offs = recordOffsets(t, newest)
	}
	require.NoError(t, os.Truncate(newest, offs[len(offs)-1]+10)) // inside the last header

	var c corruptions
	q2, _ := openQueue(t, crashed, testOptions(&c))
	got := readAll(t, q2, 7)
	_, items, unknown := c.sum()
	require.Zero(t, unknown)
	require.EqualValues(t, 88, int64(len(got))+items, "read %d, counted %d", len(got), items)
}

// A crash in the middle of a write-back leaves a temporary file that was never renamed into
// place; the next start removes it, and reads the queue as it was.
func TestOpenRemovesPartialWriteBacks(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 10, 5)
	require.NoError(t, q.Close())
	segs := segmentFiles(t, dir)
	require.NotEmpty(t, segs)
	partial := filepath.Join(dir, filepath.Base(segs[0])+restoreSuffix)
	require.NoError(t, os.WriteFile(partial, []byte("half a segment"), 0o600))

	q2, rec := openQueue(t, dir, testOptions(nil))
	require.Equal(t, 50, rec.Items)
	require.NoFileExists(t, partial)
	require.Equal(t, seq(0, 50), readAll(t, q2, 7))
}
