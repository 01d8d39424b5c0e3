package diskq

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// copyGolden copies testdata/v1 to a new directory: a queue written by the previous version
// (record format 1, position slots of 32 bytes) holding items 0..99 in five segments of
// records of 1 to 7 items, 0..9 read and acknowledged, and 95..99 popped into a lease never
// acknowledged.
func copyGolden(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir("testdata/v1")
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/v1", e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600))
	}
	return dir
}

func TestOpensQueueOfFormat1(t *testing.T) {
	dir := copyGolden(t)
	var bad corruptions
	q, rec := openQueue(t, dir, testOptions(&bad))
	require.Empty(t, bad.all)
	require.Equal(t, 2, rec.RestoredLeases, "the lease's two records")
	require.Equal(t, 90, q.Len())
	l, recs, err := q.PopTail(5) // the lease's items, back at the tail
	require.NoError(t, err)
	require.Equal(t, seq(95, 100), leaseItems(recs))
	require.NoError(t, q.AckLease(l))
	l, recs, err = q.PopTail(3) // trims an old record, in its own format
	require.NoError(t, err)
	require.Equal(t, seq(92, 95), leaseItems(recs))
	require.NoError(t, q.AckLease(l))
	appendRecords(t, q, 100, 2, 5) // new records after the old ones
	require.NoError(t, q.Close())

	q2, _ := openQueue(t, dir, testOptions(&bad))
	require.Empty(t, bad.all)
	require.Equal(t, slices.Concat(seq(10, 92), seq(100, 110)), readAll(t, q2, 7))
}

func TestDamageInQueueOfFormat1CountedByHeaders(t *testing.T) {
	dir := copyGolden(t)
	seg := filepath.Join(dir, segmentName(3))
	offs := recordOffsets(t, seg)
	flipByte(t, seg, offs[1]+headerSizeV1+2) // a payload: its header says how many items
	var bad corruptions
	q, _ := openQueue(t, dir, testOptions(&bad))
	records, items, unknown := bad.sum()
	require.Equal(t, 1, records)
	require.Zero(t, unknown)
	got := readAll(t, q, 100)
	require.Equal(t, 90, len(got)+int(items))
	require.True(t, slices.IsSorted(got[:len(got)-5]))
}

// Records popped and put back, trimmed, and written again keep the numbers contiguous: damage
// after any of it is still counted exactly.
func TestNumbersStayContiguousThroughPopsAndTrims(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(nil)
	o.SegmentBytes = 1 << 10
	q, _ := openQueue(t, dir, o)
	appendRecords(t, q, 0, 30, 5) // 0..149
	l, _, err := q.PopTail(12)    // trims a record
	require.NoError(t, err)
	require.NoError(t, q.ReleaseLease(l)) // back at the tail, numbered again
	l, _, err = q.PopTail(7)
	require.NoError(t, err)
	require.NoError(t, q.AckLease(l)) // 143..149 gone for good
	appendRecords(t, q, 1000, 10, 3)  // 1000..1029
	require.NoError(t, q.Close())

	var bad corruptions
	segs := segmentFiles(t, dir)
	for _, s := range segs[1:] { // damage the first record of every segment but the first
		flipByte(t, s, 40)
	}
	q2, _ := openQueue(t, dir, testOptions(&bad))
	got := readAll(t, q2, 1000)
	_, items, unknown := bad.sum()
	require.Zero(t, unknown)
	require.Equal(t, 143+30, len(got)+int(items))
}
