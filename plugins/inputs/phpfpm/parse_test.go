package phpfpm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// fullPage is PHP-FPM 8.2's ?full text page as a pool that has run for a while serves it:
// a worker restarted since (pm.max_requests) has a shorter "start since" than the pool.
const fullPage = `pool:                 www
process manager:      static
start time:           08/Dec/2023:14:15:27 +0000
start since:          4901
accepted conn:        3879
listen queue:         0
max listen queue:     0
listen queue len:     4096
idle processes:       1
active processes:     1
total processes:      2
max active processes: 2
max children reached: 0
slow requests:        3

************************
pid:                  583
state:                Running
start time:           08/Dec/2023:15:35:28 +0000
start since:          120
requests:             386
request duration:     159
request method:       GET
request URI:          /status?full
content length:       0
user:                 -
script:               -
last request cpu:     0.00
last request memory:  0
`

// TestParseStatusKeepsThePoolsStartSince: the worker's block after the asterisks does not
// overwrite the pool's fields (in Telegraf its start since would).
func TestParseStatusKeepsThePoolsStartSince(t *testing.T) {
	acc := &testutil.Accumulator{}
	require.NoError(t, parseStatus([]byte(fullPage), "u", time.Now(), acc))
	require.Equal(t, 1, acc.NMetrics())
	f := testutil.FieldsOf(acc.Metrics()[0])
	require.Equal(t, int64(4901), f["start_since"])
	require.Equal(t, int64(3879), f["accepted_conn"])
	require.Equal(t, int64(3), f["slow_requests"])
	require.Len(t, f, 11)
}

// TestParseStatusLikeTelegraf: lines before a pool's are no pool's (Telegraf panics on
// them), a value that is not an integer is left out, and a page without a pool line is an
// error.
func TestParseStatusLikeTelegraf(t *testing.T) {
	acc := &testutil.Accumulator{}
	page := "accepted conn: 5\npool: a\naccepted conn: x\nslow requests: 2\npool: b\nslow requests: 1\n"
	require.NoError(t, parseStatus([]byte(page), "u", time.Now(), acc))
	require.Equal(t, 2, acc.NMetrics())
	require.Equal(t, map[string]any{"slow_requests": int64(2)}, testutil.FieldsOf(acc.Metrics()[0]))
	require.Equal(t, map[string]any{"slow_requests": int64(1)}, testutil.FieldsOf(acc.Metrics()[1]))
	require.Error(t, parseStatus([]byte("File not found.\n"), "u", time.Now(), &testutil.Accumulator{}))
}
