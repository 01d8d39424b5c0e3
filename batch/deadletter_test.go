package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// seqLine writes a SeqMetric as a short line, enough for the dead letter's tests.
func seqLine(dst []byte, m morse.Metric) ([]byte, error) {
	v, _ := m.Field("v")
	seq, _ := m.Tag("seq")
	if seq == "99" {
		return dst, errors.New("cannot write metric 99")
	}
	return append(dst, "m,seq="+seq+" v="+v.String()+"i\n"...), nil
}

func TestDeadLetterKeepsWhatTheSinkRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 0, seqLine)
	require.NoError(t, err)
	dl.now = func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
	out := &testutil.ScriptOutput{Answer: func(call int, _ []morse.Metric) error {
		switch call {
		case 0:
			return morse.Permanent(morse.ReasonDatabaseNotFound, errors.New(`database not found: "x"`))
		case 1:
			return &morse.PartialWriteError{Dropped: 1, Reason: morse.ReasonBeyondRetention, Err: errors.New("dropped=1")}
		}
		return nil
	}}
	w, err := NewWriter(out, Options{Name: "influxdb", BatchSize: 2, BufferLimit: 10, FlushInterval: time.Hour,
		DeadLetter: dl, Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 4)))
	require.NoError(t, w.Close(context.Background()))
	require.NoError(t, dl.Close())

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# 2026-11-23T12:00:00Z output=influxdb reason=database_not_found error=\"database not found: \\\"x\\\"\"\n"+
		"m,seq=0 v=0i\nm,seq=1 v=1i\n"+
		"# 2026-11-23T12:00:00Z output=influxdb reason=beyond_retention_policy dropped=1 of the 2 lines below; the sink did not say which error=\"partial write: 1 dropped (beyond_retention_policy): dropped=1\"\n"+
		"m,seq=2 v=2i\nm,seq=3 v=3i\n", string(b))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestDeadLetterRotatesAndCountsWhatItRemoves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 100, seqLine)
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, dl.Write(DropEvent{Output: "o", Reason: "r", Count: 2, Metrics: testutil.SeqMetrics(2*i, 2*i+2)}))
	}
	err = dl.Write(DropEvent{Output: "o", Reason: "r", Count: 1, Metrics: testutil.SeqMetrics(99, 100)})
	require.ErrorContains(t, err, "cannot write metric 99", "an encoding failure is reported, the comment kept")
	require.NoError(t, dl.Close())
	cur, err := os.ReadFile(path)
	require.NoError(t, err)
	prev, err := os.ReadFile(path + ".1")
	require.NoError(t, err)
	require.LessOrEqual(t, len(cur), 100)
	require.LessOrEqual(t, len(prev), 100)
	lines := func(b []byte) int64 {
		var n int64
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				n++
			}
		}
		return n
	}
	require.Equal(t, int64(20), dl.Removed()+lines(prev)+lines(cur), "every metric is in a file or counted as removed")
	require.Positive(t, dl.Removed())
}
