package batch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// Metrics added after Close (a Write racing the Writer's Close) can be neither written nor
// kept: they are reported as dropped at shutdown, so that the counts stay exact.
func TestDiskBufferAddAfterCloseReportsShutdown(t *testing.T) {
	dir := t.TempDir()
	var ev evictions
	b := newTestDiskBuffer(t, 100, ev.eviction(true), DiskOptions{Dir: dir})
	addSeq(b, 0, 3, 3)
	require.NoError(t, b.Close())

	added := testutil.SeqMetrics(3, 8)
	require.Equal(t, 3, b.AddBatch(added), "what was on disk stays there")
	added[0] = testutil.SeqMetric(100) // the report keeps no reference to the caller's slice
	require.Equal(t, 3, b.Add(testutil.SeqMetric(8)))
	require.Equal(t, 6, ev.reason(morse.ReasonShutdown))
	require.Equal(t, 6, ev.count())
	require.Equal(t, testutil.SeqRange(3, 9), testutil.Seqs(ev.metrics))
	require.Empty(t, b.Batch(nil, 10))

	b2 := newTestDiskBuffer(t, 100, ev.eviction(true), DiskOptions{Dir: dir})
	require.Equal(t, testutil.SeqRange(0, 3), flat(drain(b2, 10)))
	require.Equal(t, 6, ev.count())
}
