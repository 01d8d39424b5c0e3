package batch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/diskq/diskqtest"
	"github.com/morse-agent/morse/internal/testutil"
)

// A full disk: the disk buffer keeps what the disk refuses in memory, within its limit, and
// writes it once the disk takes writes again. Nothing is acknowledged falsely, nothing is
// lost silently, and the segment is whole afterwards. The test runs in a child process with
// a low file-size limit (diskqtest).
func TestDiskBufferDiskFull(t *testing.T) {
	dir := diskqtest.ChildDir()
	if dir == "" {
		diskqtest.RunChild(t)
		return
	}
	clock := newFakeClock()
	var ev evictions
	o := DiskOptions{Dir: dir, Now: clock.Now, RetryInterval: time.Second}
	b := newTestDiskBuffer(t, 150, ev.eviction(true), o)
	diskqtest.LimitFileSize(t, 1500) // a few records of ten metrics
	addSeq(b, 0, 100, 10)
	require.Equal(t, 100, b.Len(), "what the disk refused is held in memory")
	require.Zero(t, ev.count())
	seg, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	st, err := os.Stat(seg[0])
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(1500))
	onDisk := b.q.Len()
	require.Positive(t, onDisk)
	require.Less(t, onDisk, 100)

	batch := b.Batch(nil, 1000)
	require.Equal(t, testutil.SeqRange(0, 100), testutil.Seqs(batch), "disk first, then memory, in order")
	b.Reject(batch)

	addSeq(b, 100, 200, 10) // past the limit of 150: the oldest go, from disk first
	require.Equal(t, map[string]int{morse.ReasonBufferFull: 50}, ev.reasons)
	require.Equal(t, testutil.SeqRange(0, 50), testutil.Seqs(ev.metrics))

	diskqtest.LimitFileSize(t, ^uint64(0)) // space frees
	b.Add(testutil.SeqMetric(200))         // too soon: the retry waits RetryInterval
	require.Equal(t, 150, b.Len())
	clock.Add(time.Second)
	b.Add(testutil.SeqMetric(201))
	require.Equal(t, 150, b.q.Len(), "memory went to disk")
	require.NoError(t, b.Close())

	b2 := newTestDiskBuffer(t, 1000, ev.eviction(true), DiskOptions{Dir: dir})
	require.Equal(t, testutil.SeqRange(52, 202), flat(drain(b2, 64)))
	require.Equal(t, 52, ev.count(), "two more went at the limit, none otherwise")
}
