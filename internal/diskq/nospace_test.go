package diskq

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// The disk-full tests run in a child process with a low file-size limit: see testutil.FullDiskChild.

const recordOf100 = overhead + 800 // a record of 100 test items

func TestWriteFailureLeavesNoHalfRecord(t *testing.T) {
	dir := testutil.FullDiskChild(t)
	if dir == "" {
		return // the child ran the test
	}
	var bad corruptions
	q, _ := openQueue(t, dir, testOptions(&bad))
	testutil.LimitFileSize(t, 4*recordOf100+500)
	appendRecords(t, q, 0, 4, 100)
	err := q.Append(100, 0, encodeItems(seq(400, 500)...))
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, err, syscall.EFBIG)
	seg := segmentFiles(t, dir)[0]
	st, err := os.Stat(seg)
	require.NoError(t, err)
	require.Equal(t, int64(4*recordOf100), st.Size(), "the partial write was cut back")
	require.Equal(t, 400, q.Len())

	testutil.LimitFileSize(t, ^uint64(0)) // space frees: the queue resumes by itself
	appendRecords(t, q, 400, 2, 100)
	require.NoError(t, q.Close())
	q2, rec := openQueue(t, dir, testOptions(&bad))
	require.Zero(t, rec.TornBytes)
	require.Empty(t, bad.all)
	require.Equal(t, seq(0, 600), readAll(t, q2, 1000))
}

func TestReleaseOnFullDiskKeepsTheLease(t *testing.T) {
	dir := testutil.FullDiskChild(t)
	if dir == "" {
		return // the child ran the test
	}
	q, _ := openQueue(t, dir, testOptions(nil))
	appendRecords(t, q, 0, 3, 100)
	l, _, err := q.PopTail(200)
	require.NoError(t, err)
	testutil.LimitFileSize(t, 4*recordOf100+500)
	appendRecords(t, q, 300, 3, 100) // the segment holds 4 records now: full
	err = q.ReleaseLease(l)
	require.ErrorIs(t, err, ErrNoSpace)
	require.Equal(t, 600, q.Len(), "the lease's items still count")
	leases, _ := filepath.Glob(filepath.Join(dir, "*.lease"))
	require.Len(t, leases, 1, "and stay on disk in their lease file")

	l2, recs, err := q.PopTail(200)
	require.NoError(t, err)
	require.Equal(t, seq(100, 300), append(itemsOf(recs[0]), itemsOf(recs[1])...), "handed out first")
	require.Error(t, q.ReleaseLease(l2))

	testutil.LimitFileSize(t, ^uint64(0))
	appendRecords(t, q, 600, 1, 100) // a write succeeds: the lease goes back to disk
	leases, _ = filepath.Glob(filepath.Join(dir, "*.lease"))
	require.Empty(t, leases)
	require.NoError(t, q.Close())
	q2, _ := openQueue(t, dir, testOptions(nil))
	got := readAll(t, q2, 1000)
	want := append(append(append(seq(0, 100), seq(300, 600)...), seq(600, 700)...), seq(100, 300)...)
	require.Equal(t, want, got)
}

func TestNoSpaceRecognised(t *testing.T) {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG} {
		require.ErrorIs(t, noSpace(&os.PathError{Op: "write", Err: e}), ErrNoSpace)
	}
	require.False(t, errors.Is(noSpace(syscall.EIO), ErrNoSpace))
}
