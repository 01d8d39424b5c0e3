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
	influxparser "github.com/morse-agent/morse/plugins/parsers/influx"
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
	require.Equal(t, "# 2026-11-23T12:00:00Z output=influxdb reason=database_not_found metrics=2 error=\"database not found: \\\"x\\\"\"\n"+
		"m,seq=0 v=0i\nm,seq=1 v=1i\n"+
		"# 2026-11-23T12:00:00Z output=influxdb reason=beyond_retention_policy metrics=2 dropped=1 of the batch's 2 metrics; the sink did not say which error=\"partial write: 1 dropped (beyond_retention_policy): dropped=1\"\n"+
		"m,seq=2 v=2i\nm,seq=3 v=3i\n", string(b))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

func TestDeadLetterRotatesAndCountsWhatItRemoves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 100, seqLine)
	require.NoError(t, err)
	var removed int64
	for i := range 10 {
		res, err := dl.Write(DropEvent{Output: "o", Reason: "r", Count: 2, Metrics: testutil.SeqMetrics(2*i, 2*i+2)})
		require.NoError(t, err)
		require.Equal(t, 2, res.Kept)
		removed += res.Removed
	}
	require.NoError(t, dl.Close())
	cur, prev := readFile(t, path), readFile(t, path+".1")
	require.LessOrEqual(t, len(cur), 100)
	require.LessOrEqual(t, len(prev), 100)
	require.Equal(t, int64(20), dl.Removed()+records(t, prev)+records(t, cur), "every metric is in a file or counted as removed")
	require.Positive(t, dl.Removed())
	require.Equal(t, dl.Removed(), removed, "each removal is reported by the write that caused it")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// records counts the metrics of line protocol by parsing it, as `morse replay` reads it.
func records(t *testing.T, text string) int64 {
	t.Helper()
	var n int64
	p := &influxparser.Parser{}
	require.NoError(t, p.ParseReader(strings.NewReader(text), func(morse.Metric) { n++ },
		func(le influxparser.LineError) { t.Fatalf("line %d: %v", le.Line, le) }))
	return n
}
