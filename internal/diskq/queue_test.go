package diskq

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendReadAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(nil)
	opts.SegmentBytes = 200 // three records of 5 items (68 bytes each) a segment at most
	q, _ := openQueue(t, dir, opts)
	appendRecords(t, q, 0, 20, 5)
	require.Equal(t, 100, q.Len())
	require.Greater(t, len(segmentFiles(t, dir)), 5)
	for _, max := range []int{1, 3, 7} {
		t.Run("", func(t *testing.T) {
			sp, got := readSome(t, q, max)
			require.Equal(t, max, sp.Items())
			q.Unread(sp)
			require.Equal(t, seq(0, uint64(max)), got)
		})
	}
	require.Equal(t, seq(0, 100), readAll(t, q, 13))
	require.Zero(t, q.Len())
	require.Len(t, segmentFiles(t, dir), 1, "segments left behind are deleted")
}

func TestRestartResumesAtPosition(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 10, 4)
	sp, got := readSome(t, q, 12)
	require.Equal(t, seq(0, 12), got)
	require.NoError(t, q.Ack(sp))
	_, got = readSome(t, q, 6) // read, never acknowledged: handed out again after a restart
	require.Equal(t, seq(12, 18), got)
	require.NoError(t, q.Close())

	q2, rec := openQueue(t, dir, testOptions(nil))
	require.Equal(t, 28, rec.Items)
	require.Equal(t, seq(12, 40), readAll(t, q2, 5))
}

func TestPartialRecordAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 1, 10)
	sp, got := readSome(t, q, 3)
	require.Equal(t, seq(0, 3), got)
	require.NoError(t, q.Ack(sp))
	require.NoError(t, q.Close())

	q2, _ := openQueue(t, dir, testOptions(nil))
	require.Equal(t, 7, q2.Len())
	sp, got = readSome(t, q2, 4)
	require.Equal(t, seq(3, 7), got)
	require.NoError(t, q2.Ack(sp))
	require.NoError(t, q2.Close())

	q3, _ := openQueue(t, dir, testOptions(nil))
	require.Equal(t, seq(7, 10), readAll(t, q3, 100))
}

func TestAcksOutOfOrderAndUnread(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 6, 5)
	a, _ := readSome(t, q, 10)
	b, gotB := readSome(t, q, 10)
	c, _ := readSome(t, q, 5)
	require.Equal(t, seq(10, 20), gotB)
	require.NoError(t, q.Ack(b)) // b is done, a must be retried
	q.Unread(a)
	q.Unread(c)
	require.Equal(t, 20, q.Len())
	a2, got := readSome(t, q, 100)
	require.Equal(t, seq(0, 10), got, "a span stops where an acknowledged one starts")
	require.NoError(t, q.Ack(a2))
	require.Equal(t, seq(20, 30), readAll(t, q, 100), "the acknowledged span is not handed out again")
	require.NoError(t, q.Close())
	q2, rec := openQueue(t, dir, testOptions(nil))
	require.Zero(t, rec.Items)
	require.Zero(t, q2.Len())
}

func TestFileModesAndLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "queue")
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 3, 2)
	l, _, err := q.PopTail(1)
	require.NoError(t, err)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), e.Name())
		names[filepath.Ext(e.Name())] = true
	}
	require.Equal(t, map[string]bool{".seg": true, ".lease": true, "": true}, names)

	_, _, err = Open(dir, testOptions(nil))
	require.ErrorContains(t, err, "in use", "a second queue on the same directory is refused")
	require.NoError(t, q.AckLease(l))
}

func TestDirectorySyncedOnSegmentCreateAndRemove(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(nil)
	opts.SegmentBytes = 100
	q, _ := openQueue(t, dir, opts)
	syncs := 0
	q.fsyncDir = func() error { syncs++; return nil }
	appendRecords(t, q, 0, 1, 5) // 68 bytes: fits in the first segment
	require.Zero(t, syncs)
	appendRecords(t, q, 5, 1, 5) // a new segment
	require.Equal(t, 1, syncs, "segment created")
	require.Equal(t, seq(0, 5), readAll(t, q, 5)[:5])
	require.Equal(t, 2, syncs, "segment removed once the head left it")
	require.Len(t, segmentFiles(t, dir), 1)

	never := testOptions(nil)
	never.Sync, never.SegmentBytes = SyncNever, 100
	qn, _ := openQueue(t, t.TempDir(), never)
	qn.fsyncDir = func() error { syncs++; return nil }
	appendRecords(t, qn, 0, 3, 5)
	require.Equal(t, seq(0, 15), readAll(t, qn, 100))
	require.Equal(t, 2, syncs, "SyncNever never syncs")
}

func TestSyncIntervalGoroutineStopsOnClose(t *testing.T) {
	opts := testOptions(nil)
	opts.Sync, opts.SyncInterval = SyncInterval, 5e6
	q, _, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	appendRecords(t, q, 0, 2, 2)
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.unsynced) == 0
	}, 5e9, 5e6, "the goroutine synced the segment")
	require.NoError(t, q.Close())
	select {
	case <-q.done:
	default:
		t.Fatal("the sync goroutine still runs after Close")
	}
	require.ErrorIs(t, q.Append(1, 0, encodeItems(1)), ErrClosed)
}

func TestDropOldestByCountAgeAndBytes(t *testing.T) {
	q, _ := openQueue(t, t.TempDir(), testOptions(nil))
	appendRecords(t, q, 0, 10, 10) // record i has time 10*i
	tm, ok := q.OldestTime()
	require.True(t, ok)
	require.Zero(t, tm)

	var dropped []uint64
	keep := func(r Record) { dropped = append(dropped, itemsOf(r)...) }
	n, err := q.Drop(15, anyTime, keep)
	require.NoError(t, err)
	require.Equal(t, 15, n)
	require.Equal(t, seq(0, 15), dropped)
	tm, _ = q.OldestTime()
	require.Equal(t, int64(10), tm)

	n, err = q.Drop(1000, 40, nil) // records with time < 40: the rest of 10..19, 20..29, 30..39
	require.NoError(t, err)
	require.Equal(t, 25, n)
	require.Equal(t, 60, q.Len())

	recBytes := int64(overhead + 80)
	require.Equal(t, 6*recBytes, q.PendingBytes())
	dropped = nil
	n, err = q.DropBytes(4*recBytes, keep)
	require.NoError(t, err)
	require.Equal(t, 20, n)
	require.Equal(t, seq(40, 60), dropped)
	require.Equal(t, 4*recBytes, q.Bytes())
	require.Equal(t, seq(60, 100), readAll(t, q, 100))
	_, ok = q.OldestTime()
	require.False(t, ok)
}

func TestDropSkipsSpansInFlight(t *testing.T) {
	q, _ := openQueue(t, t.TempDir(), testOptions(nil))
	appendRecords(t, q, 0, 4, 5)
	sp, _ := readSome(t, q, 7)
	n, err := q.Drop(4, anyTime, nil)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	q.Unread(sp)
	require.Equal(t, append(seq(0, 7), seq(11, 20)...), readAll(t, q, 100))
}
