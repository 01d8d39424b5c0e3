package influxdbv2

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// TestWriteTimeoutBoundsTheWriter: the batch writer bounds each write by the timeout option
// when it is longer than its default of 30 s, which would cut it short, and by 30 s when it
// is shorter, leaving room for a write of several requests.
func TestWriteTimeoutBoundsTheWriter(t *testing.T) {
	for _, tc := range []struct {
		timeout, want time.Duration
	}{
		{45 * time.Second, 45 * time.Second},
		{2 * time.Second, batch.DefaultWriteTimeout},
		{0, batch.DefaultWriteTimeout}, // no timeout option: the writer's own bound
	} {
		t.Run(tc.timeout.String(), func(t *testing.T) {
			o := connected(t, DefaultURL, func(o *InfluxDBv2) { o.Timeout = morse.Duration(tc.timeout) })
			w, err := batch.NewWriter(o, batch.Options{FlushInterval: time.Hour, Logger: testutil.QuietLogger(), Initialized: true})
			require.NoError(t, err)
			require.Equal(t, tc.want, w.WriteTimeout())
			require.NoError(t, w.Close(testutil.Context(t)))
		})
	}
}

// TestEarly413 writes to a server that answers 413 before it reads the body. The halves are
// built while the transport may still be sending the refused body: they must go in buffers
// it no longer reads (the race detector checks), and every line must arrive intact.
func TestEarly413(t *testing.T) {
	var st store
	url := testserver.EarlyTooLarge(t, 32<<10, v2TooLarge, func(body []byte) { st.add(splitLines(body)...) })
	o := connected(t, url, func(o *InfluxDBv2) { o.ContentEncoding = "identity" })
	batch := numbered(t, 40_000) // about 0.9 MB of line protocol: 413 five times over
	err := o.Write(testutil.Context(t), batch)
	require.NoError(t, err)
	require.Equal(t, linesOf(t, batch), st.distinct())
	require.False(t, errors.Is(err, httpout.ErrTooLarge))
}
