package batch

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/serializers/influx"
	"github.com/morse-agent/morse/selfstat"
)

// TestCountRecordsSkipsNewlinesInStrings: a string field keeps its newlines raw, so a line
// that starts inside one, even with '#', is not a metric of its own; quotes elsewhere than
// at the start of a field value do not start a string.
func TestCountRecordsSkipsNewlinesInStrings(t *testing.T) {
	tests := []struct {
		text string
		want int64
	}{
		{"m s=\"a\nb\" 1\n", 1},
		{"m s=\"a\n# b\n\nc\" 1\nm v=1i 2\n", 2},
		{"m s=\"a\\\"\nb\" 1\n", 1},                  // an escaped quote does not end the string
		{"m s=\"a\\\\\" 1\nm v=1i 2\n", 2},           // an escaped backslash, then the end
		{"m\"x,t=\"y f=1 1\nm v=1i 2\n", 2},          // quotes in names are no strings
		{"m a\"b=1,s=\"x\ny\" 1\n", 1},               // nor in a field key
		{"m,t=a\\ b,u=c\\=d s=\"x\ny\",v=1i 1\n", 1}, // escaped space and equals in tags
		{"# a \"comment\nm v=1i 1\n", 1},
		{"\n\n  \nm v=1i 1", 1}, // blank lines; the last line without its newline
		{"m s=\"\",t=\"a\nb\" 1\n", 1},
	}
	for _, tc := range tests {
		n, err := countRecords(bufio.NewReader(strings.NewReader(tc.text)))
		require.NoError(t, err)
		require.Equal(t, tc.want, n, "%q", tc.text)
		require.Equal(t, tc.want, records(t, tc.text), "the parser reads %q the same", tc.text)
	}
}

// multiline is a metric whose string field has raw newlines, one of them followed by '#'.
func multiline(i int) morse.Metric {
	return morse.NewMetric("m", []morse.Tag{{Key: "seq", Value: strconv.Itoa(i)}},
		[]morse.Field{{Key: "s", Value: morse.String("first\n# second\n\nthird")}}, time.Unix(int64(i), 0))
}

func multilines(from, to int) []morse.Metric {
	var ms []morse.Metric
	for i := from; i < to; i++ {
		ms = append(ms, multiline(i))
	}
	return ms
}

// TestDeadLetterCountsRemovedMetricsNotLines: what rotation removes is counted by metric,
// whether this process wrote the file or an earlier run did, however many lines a metric
// takes.
func TestDeadLetterCountsRemovedMetricsNotLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	enc := influx.New(influx.Options{}).AppendMetric
	written := 0
	write := func(dl *DeadLetterFile, n int) {
		res, err := dl.Write(DropEvent{Output: "o", Reason: "r", Count: n, Metrics: multilines(written, written+n)})
		require.NoError(t, err)
		require.Equal(t, n, res.Kept)
		written += n
	}
	// An earlier run leaves FILE.1 and FILE behind.
	first, err := OpenDeadLetterFile(path, 300, enc)
	require.NoError(t, err)
	for range 4 {
		write(first, 2)
	}
	require.NoError(t, first.Close())
	require.FileExists(t, path+".1")

	dl, err := OpenDeadLetterFile(path, 300, enc)
	require.NoError(t, err)
	for range 6 {
		write(dl, 2)
	}
	require.NoError(t, dl.Close())
	left := records(t, readFile(t, path)) + records(t, readFile(t, path+".1"))
	require.Positive(t, dl.Removed())
	require.Equal(t, int64(written), first.Removed()+dl.Removed()+left, "every metric is in a file or counted once")
}

// TestDeadLetterRotationThatFailsKeepsTheFile: a rotation that cannot rename the file, here
// because a directory is where FILE.1 goes, reports the error and keeps appending to the
// file; it removes and counts nothing until it succeeds.
func TestDeadLetterRotationThatFailsKeepsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 60, seqLine)
	require.NoError(t, err)
	seq := 0
	write := func() (DeadLetterResult, error) {
		seq += 2
		return dl.Write(DropEvent{Output: "o", Reason: "r", Count: 2, Metrics: testutil.SeqMetrics(seq-2, seq)})
	}
	for dl.Removed() == 0 && !fileExists(path+".1") { // up to the first rotation
		_, err := write()
		require.NoError(t, err)
	}
	saved := filepath.Join(t.TempDir(), "saved.1")
	require.NoError(t, os.Rename(path+".1", saved))
	require.NoError(t, os.MkdirAll(filepath.Join(path+".1", "in-the-way"), 0o700))

	for range 3 {
		res, err := write()
		require.ErrorContains(t, err, "rotate")
		require.Equal(t, DeadLetterResult{Kept: 2}, res, "kept in the file, nothing removed")
	}
	require.Zero(t, dl.Removed())

	require.NoError(t, os.RemoveAll(path+".1"))
	require.NoError(t, os.Rename(saved, path+".1"))
	res, err := write()
	require.NoError(t, err)
	require.Equal(t, 2, res.Kept)
	require.Positive(t, res.Removed, "the FILE.1 put back is removed now, and counted")
	require.NoError(t, dl.Close())
	left := mustRecords(t, path) + mustRecords(t, path+".1")
	require.Equal(t, int64(seq), dl.Removed()+left, "every metric is in a file or counted as removed, once")
}

// TestDeadLetterRotationThatCannotReopenKeepsTheFile: once renamed, the file is kept open
// and appended to where it now is, until FILE can be created again; nothing is counted twice.
func TestDeadLetterRotationThatCannotReopenKeepsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 60, seqLine)
	require.NoError(t, err)
	failing := true
	dl.open = func(p string) (*os.File, int64, error) {
		if failing {
			return nil, 0, errors.New("no room for a new file")
		}
		return openAppend(p)
	}
	seq, failures := 0, 0
	for seq < 40 {
		res, err := dl.Write(DropEvent{Output: "o", Reason: "r", Count: 2, Metrics: testutil.SeqMetrics(seq, seq+2)})
		seq += 2
		require.Equal(t, 2, res.Kept, "kept whatever the rotation did")
		if err != nil {
			require.ErrorContains(t, err, "no room for a new file")
			failures++
		}
		failing = failures < 3
	}
	require.Equal(t, 3, failures)
	require.NoError(t, dl.Close())
	left := mustRecords(t, path) + mustRecords(t, path+".1")
	require.Equal(t, int64(seq), dl.Removed()+left, "every metric is in a file or counted as removed, once")
}

// TestDeadLetterCountsWhatItCannotKeep: a metric that cannot be encoded is left out of its
// group, whose comment says so, and counted in dead_letter_failed, as is what reaches a
// closed dead letter.
func TestDeadLetterCountsWhatItCannotKeep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 0, seqLine)
	require.NoError(t, err)
	dl.now = func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
	refuse := morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("conflict"))
	out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return refuse }}
	reg := selfstatRegistry()
	w, err := NewWriter(out, Options{Name: "sink", BatchSize: 3, BufferLimit: 10, FlushInterval: time.Hour,
		DeadLetter: dl, Stats: reg, Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, w.WriteBatch([]morse.Metric{testutil.SeqMetric(98), testutil.SeqMetric(99), testutil.SeqMetric(100)}))
	require.NoError(t, w.Close(context.Background()))
	require.Equal(t, "# 2026-11-23T12:00:00Z output=sink reason=field_type_conflict metrics=2 missing=1 "+
		"encode_error=\"cannot write metric 99\" error=\"conflict\"\nm,seq=98 v=98i\nm,seq=100 v=100i\n", readFile(t, path))
	require.Equal(t, int64(1), w.Stats().DeadLetterFailed)
	require.Equal(t, int64(1), fieldOf(reg, "internal_write", "dead_letter_failed"))

	require.NoError(t, dl.Close())
	res, err := dl.Write(DropEvent{Output: "o", Reason: "r", Count: 2, Metrics: testutil.SeqMetrics(0, 2)})
	require.Error(t, err)
	require.Equal(t, DeadLetterResult{Failed: 2}, res)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mustRecords(t *testing.T, path string) int64 {
	t.Helper()
	return records(t, readFile(t, path))
}

func selfstatRegistry() *selfstat.Registry { return selfstat.New() }

// fieldOf reads one field of the registry's only series of measurement; -1 if it has none.
func fieldOf(reg *selfstat.Registry, measurement, field string) int64 {
	for _, s := range reg.Snapshot() {
		if s.Measurement != measurement {
			continue
		}
		for _, f := range s.Fields {
			if f.Key == field {
				return f.Value
			}
		}
	}
	return -1
}

// TestDeadLetterRemovalsAreSelfMetrics: what the dead letter's bound removed reaches the
// output's internal_write as dead_letter_removed; an output without a dead letter reports
// Telegraf's fields alone.
func TestDeadLetterRemovalsAreSelfMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.lp")
	dl, err := OpenDeadLetterFile(path, 100, seqLine)
	require.NoError(t, err)
	refuse := morse.Permanent(morse.ReasonFieldTypeConflict, errors.New("conflict"))
	out := &testutil.ScriptOutput{Answer: func(int, []morse.Metric) error { return refuse }}
	reg := selfstatRegistry()
	w, err := NewWriter(out, Options{Name: "sink", BatchSize: 2, BufferLimit: 40, FlushInterval: time.Hour,
		DeadLetter: dl, Stats: reg, Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, w.WriteBatch(testutil.SeqMetrics(0, 30)))
	require.NoError(t, w.Close(context.Background()))
	require.NoError(t, dl.Close())
	st := w.Stats()
	require.Positive(t, st.DeadLetterRemoved)
	require.Equal(t, dl.Removed(), st.DeadLetterRemoved)
	require.Equal(t, st.DeadLetterRemoved, fieldOf(reg, "internal_write", "dead_letter_removed"))
	require.Equal(t, int64(30), st.DeadLetterRemoved+mustRecords(t, path)+mustRecords(t, path+".1"))

	plain := selfstatRegistry()
	w, err = NewWriter(&testutil.ScriptOutput{}, Options{Stats: plain, Logger: testutil.QuietLogger()})
	require.NoError(t, err)
	require.NoError(t, w.Close(context.Background()))
	require.Equal(t, int64(-1), fieldOf(plain, "internal_write", "dead_letter_removed"))
	require.Equal(t, int64(-1), fieldOf(plain, "internal_write", "dead_letter_failed"))
}
