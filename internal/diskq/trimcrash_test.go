package diskq

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// A crash inside trimRecord, after the shortened header (and trailer) were written and
// before the truncate, leaves the rest of the trimmed record between it and newer records.
// Those items are in the lease, written first: Open skips the rest without counting it
// damaged, and puts the lease back. Only the newer records are then held twice, as any
// crash between the lease and the cut leaves them.
func TestOpenRecognisesCrashInsideTrim(t *testing.T) {
	dir := t.TempDir()
	var c corruptions
	q, _ := openQueue(t, dir, testOptions(&c))
	appendRecords(t, q, 0, 1, 10) // 0..9
	appendRecords(t, q, 10, 1, 2) // 10..11, newer, in the same segment
	seg := filepath.Join(dir, segmentName(1))
	before, err := os.ReadFile(seg)
	require.NoError(t, err)
	l, recs, err := q.PopTail(4) // takes 10, 11 and trims 8, 9 off the first record
	require.NoError(t, err)
	require.Equal(t, seq(8, 12), leaseItems(recs))
	require.Equal(t, 4, l.Items())
	require.NoError(t, q.Close()) // the lease stays, as after a crash
	trimmed, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.Less(t, len(trimmed), len(before))
	crashed := slices.Concat(trimmed, before[len(trimmed):]) // the truncate never ran
	require.NoError(t, os.WriteFile(seg, crashed, 0o600))

	q2, rec := openQueue(t, dir, testOptions(&c))
	records, items, unknown := c.sum()
	require.Zero(t, records+int(items)+unknown, "nothing was lost")
	require.Zero(t, rec.Corrupt.Bytes)
	require.Equal(t, 2, rec.RestoredLeases, "the records of the lease")
	require.Positive(t, rec.TrimmedBytes)
	got := readAll(t, q2, 100)
	require.Equal(t, slices.Concat(seq(0, 8), seq(10, 12), seq(8, 12)), got)
}
