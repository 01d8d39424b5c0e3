package diskq

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func popAll(t *testing.T, q *Queue, max int) [][]uint64 {
	t.Helper()
	var batches [][]uint64
	for {
		l, recs, err := q.PopTail(max)
		require.NoError(t, err)
		if l == nil {
			return batches
		}
		var got []uint64
		for _, r := range recs {
			got = append(got, itemsOf(r)...)
		}
		require.Len(t, got, l.Items())
		require.LessOrEqual(t, len(got), max)
		batches = append(batches, got)
		require.NoError(t, q.AckLease(l))
	}
}

func TestPopTailTakesNewestFirst(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(nil)
	opts.SegmentBytes = 150
	q, _ := openQueue(t, dir, opts)
	appendRecords(t, q, 0, 5, 4) // 0..19, in records of 4
	got := popAll(t, q, 6)
	require.Equal(t, [][]uint64{seq(14, 20), seq(8, 14), seq(2, 8), seq(0, 2)}, got)
	require.Zero(t, q.Len())
	require.Len(t, segmentFiles(t, dir), 1)
	leases, _ := filepath.Glob(filepath.Join(dir, "*.lease"))
	require.Empty(t, leases)
	require.NoError(t, q.Close())
	q2, rec := openQueue(t, dir, opts)
	require.Zero(t, rec.Items)
	appendRecords(t, q2, 50, 1, 3)
	require.Equal(t, seq(50, 53), readAll(t, q2, 10))
}

func TestPopTailTrimSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 2, 10)
	l, _, err := q.PopTail(3)
	require.NoError(t, err)
	require.NoError(t, q.AckLease(l))
	appendRecords(t, q, 100, 1, 2) // appended after the trimmed record
	require.Equal(t, 19, q.Len())
	require.NoError(t, q.Close())
	q2, rec := openQueue(t, dir, testOptions(nil))
	require.Zero(t, rec.TornBytes)
	require.Equal(t, append(seq(0, 17), seq(100, 102)...), readAll(t, q2, 100))
}

func TestPopTailStopsAtTheHead(t *testing.T) {
	q, _ := openQueue(t, t.TempDir(), testOptions(nil))
	appendRecords(t, q, 0, 2, 5)
	n, err := q.Drop(3, anyTime, nil) // the head is 3 items into the first record
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, [][]uint64{seq(5, 10), seq(3, 5)}, popAll(t, q, 5))
	require.Zero(t, q.Len())
	appendRecords(t, q, 20, 1, 2)
	require.Equal(t, seq(20, 22), readAll(t, q, 5), "the head's skip does not apply to new records")
}

func TestReleasedLeaseIsPoppedFirstAgain(t *testing.T) {
	q, _ := openQueue(t, t.TempDir(), testOptions(nil))
	appendRecords(t, q, 0, 3, 4)
	l, _, err := q.PopTail(4)
	require.NoError(t, err)
	appendRecords(t, q, 100, 1, 2) // arrived while the lease was out
	require.NoError(t, q.ReleaseLease(l))
	require.Equal(t, 14, q.Len())
	require.Equal(t, [][]uint64{seq(8, 12), {6, 7, 100, 101}, seq(2, 6), seq(0, 2)}, popAll(t, q, 4))
}

func TestLeaseLeftByACrashComesBack(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 3, 4)
	_, _, err := q.PopTail(6)
	require.NoError(t, err)
	// A crash: the lease is never acknowledged. Close stands in for it; it keeps the lease.
	require.NoError(t, q.Close())
	q2, rec := openQueue(t, dir, testOptions(nil))
	require.Equal(t, 2, rec.RestoredLeases)
	require.Equal(t, 12, rec.Items)
	leases, _ := filepath.Glob(filepath.Join(dir, "*.lease"))
	require.Empty(t, leases)
	require.Equal(t, [][]uint64{seq(6, 12), seq(0, 6)}, popAll(t, q2, 6))
}

func TestCrashBetweenLeaseAndCutDuplicatesOnce(t *testing.T) {
	dir := t.TempDir()
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 2, 4)
	require.NoError(t, q.Close())
	seg, err := os.ReadFile(segmentFiles(t, dir)[0])
	require.NoError(t, err)
	q, _ = openQueue(t, dir, testOptions(nil))
	_, _, err = q.PopTail(4)
	require.NoError(t, err)
	require.NoError(t, q.Close())
	// Undo the cut: the lease was written, the truncate never happened.
	require.NoError(t, os.WriteFile(segmentFiles(t, dir)[0], seg, 0o600))
	q2, _ := openQueue(t, dir, testOptions(nil))
	require.Equal(t, append(seq(0, 8), seq(4, 8)...), readAll(t, q2, 100))
}
