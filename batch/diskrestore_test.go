package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func errorLogged(logs *testutil.Logs, s string) func() bool {
	return func() bool {
		for _, e := range logs.Errors() {
			if strings.Contains(e, s) {
				return true
			}
		}
		return false
	}
}

// TestDiskBufferDirectoryRemoved: the buffer's directory is removed while a batch is in
// flight. Within a sync the buffer logs it, naming the directory, and writes back what it
// holds, so that the next start has every metric, the batch in flight included.
func TestDiskBufferDirectoryRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "influxdb-1")
	var logs testutil.Logs
	var ev evictions
	b := newTestDiskBuffer(t, 10000, ev.eviction(false),
		DiskOptions{Dir: dir, SyncInterval: time.Hour, SegmentBytes: 1 << 10, Logger: logs.Logger()})
	addSeq(b, 0, 1000, 10)
	batch := b.Batch(nil, 100)
	require.Equal(t, testutil.SeqRange(0, 100), testutil.Seqs(batch))
	// The check runs when the test says, not on a timer that could make the directory
	// again while RemoveAll is still emptying it.
	require.NoError(t, os.RemoveAll(dir))
	b.q.Check()
	require.Eventually(t, errorLogged(&logs, "dir="+dir), 10*time.Second, 5*time.Millisecond)
	require.Len(t, logs.Errors(), 1)
	require.Contains(t, logs.Errors()[0], "metrics=1000")
	addSeq(b, 1000, 1100, 10)
	require.NoError(t, b.Close())
	require.Zero(t, ev.count())
	require.Len(t, logs.Errors(), 1, "logged once")

	b2 := newTestDiskBuffer(t, 10000, ev.eviction(false), DiskOptions{Dir: dir})
	require.Equal(t, testutil.SeqRange(0, 1100), flat(drain(b2, 64)))
	require.Zero(t, ev.count())
}

// TestDiskBufferDirectoryLostCounted: when the directory cannot be made again, the buffer
// says so, and at Close counts what the next start will not find as corrupt.
func TestDiskBufferDirectoryLostCounted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "influxdb-1")
	var logs testutil.Logs
	var ev evictions
	b := newTestDiskBuffer(t, 10000, ev.eviction(false),
		DiskOptions{Dir: dir, SyncInterval: time.Hour, Logger: logs.Logger()})
	addSeq(b, 0, 1000, 10)
	b.Batch(nil, 100)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, nil, 0o600)) // a file takes the directory's name
	b.q.Check()
	require.Eventually(t, errorLogged(&logs, "cannot be made again"), 10*time.Second, 5*time.Millisecond)
	require.NoError(t, b.Close())
	require.Equal(t, map[string]int{morse.ReasonCorrupt: 1000}, ev.reasons)
}
