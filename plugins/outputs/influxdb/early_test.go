package influxdb

import (
	"bytes"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestEarly413 writes to a server that answers 413 before it reads the body, as a proxy with
// a body limit may. The halves are built while Go's transport may still be sending the
// refused body: they must go in buffers it no longer reads (the race detector checks), and
// every line must arrive once and intact.
func TestEarly413(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	url := testserver.EarlyTooLarge(t, 32<<10, `{"error":"Request Entity Too Large"}`, func(body []byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range bytes.Split(body, []byte("\n")) {
			if len(l) > 0 {
				got[string(l)]++
			}
		}
	})
	o := connected(t, url, "db", func(o *InfluxDB) { o.ContentEncoding = "identity"; o.SkipDatabaseCreation = true })
	batch := make([]morse.Metric, 40_000) // about 0.9 MB of line protocol: 413 five times over
	for i := range batch {
		batch[i] = point("m", int64(i), "#i", strconv.Itoa(i), "v", float64(i))
	}
	require.NoError(t, o.Write(testutil.Context(t), batch))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, len(batch))
	for l, n := range got {
		require.Equal(t, 1, n, "%q", l)
	}
}
