package batch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// newTestDiskBuffer opens a disk buffer in a directory of its own (o.Dir, or a new one),
// closed when the test ends.
func newTestDiskBuffer(t *testing.T, limit int, ev Eviction, o DiskOptions) *DiskBuffer {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Logger == nil {
		o.Logger = testutil.QuietLogger()
	}
	b, err := NewDiskBuffer(limit, ev, o)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// newSuiteDiskBuffer is the disk buffer with default options, for the buffer suite.
func newSuiteDiskBuffer(t *testing.T, limit int, ev Eviction) Buffer {
	return newTestDiskBuffer(t, limit, ev, DiskOptions{})
}
