package batch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/diskq"
	"github.com/morse-agent/morse/internal/testutil"
)

// appendUndecodable writes a record of items metrics that passes its checksum but that this
// codec cannot read, as one written by another codec version, straight to the queue in dir.
func appendUndecodable(t *testing.T, dir string, items int) {
	t.Helper()
	q, _, err := diskq.Open(dir, diskq.Options{Sync: diskq.SyncManual, Split: splitPayload})
	require.NoError(t, err)
	require.NoError(t, q.Append(items, 1, func(dst []byte) []byte {
		return append(dst, codecVersion+100, 0, 0xff, 0xff)
	}))
	require.NoError(t, q.Close())
}

func (e *evictions) reason(r string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reasons[r]
}

// An undecodable record is dropped under morse.ReasonCorrupt and acknowledged, even when a
// batch holds nothing else: otherwise the flusher, seeing an empty batch, never settles it,
// the read position stays before it for good, and a restart delivers everything again.
func TestDiskBufferDropsUndecodableRecords(t *testing.T) {
	for _, newest := range []bool{false, true} {
		t.Run(fmt.Sprintf("newest first %v", newest), func(t *testing.T) {
			const bad = 50
			dir := t.TempDir()
			appendUndecodable(t, dir, bad)
			var ev evictions
			o := DiskOptions{Dir: dir, NewestFirst: newest}
			b := newTestDiskBuffer(t, 1000, ev.eviction(true), o)
			addSeq(b, 0, 20, 5)
			require.Equal(t, bad+20, b.Len())

			// Batches of 10 start on the undecodable record (oldest first) or end on it.
			got := flat(drain(b, 10))
			require.ElementsMatch(t, testutil.SeqRange(0, 20), got)
			require.Zero(t, b.Len())
			require.Equal(t, bad, ev.reason(morse.ReasonCorrupt))
			require.Equal(t, bad, ev.count(), "nothing else was dropped")

			addSeq(b, 20, 30, 5)
			require.ElementsMatch(t, testutil.SeqRange(20, 30), flat(drain(b, 10)))
			require.NoError(t, b.Close())

			b2 := newTestDiskBuffer(t, 1000, ev.eviction(true), o)
			require.Zero(t, b2.Len(), "nothing is delivered again after a restart")
			require.Empty(t, drain(b2, 10))
			require.Equal(t, bad, ev.count())
		})
	}
}

// A batch whose records are partly undecodable holds the rest, and the undecodable metrics
// are dropped when it is accepted.
func TestDiskBufferBatchSkipsUndecodableRecords(t *testing.T) {
	dir := t.TempDir()
	appendUndecodable(t, dir, 3)
	var ev evictions
	b := newTestDiskBuffer(t, 1000, ev.eviction(true), DiskOptions{Dir: dir})
	addSeq(b, 0, 10, 5)

	batch := b.Batch(nil, 10)
	require.Equal(t, testutil.SeqRange(0, 10), testutil.Seqs(batch), "a batch goes on past what it cannot decode")
	require.Zero(t, b.Len())
	b.Accept(batch)
	require.Equal(t, 3, ev.reason(morse.ReasonCorrupt))
	require.Equal(t, 3, ev.count())
}
