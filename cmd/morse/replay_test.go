package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestReplayAfterARealTypeConflict: a real InfluxDB 1.6.7 refuses a string into a float
// field; `morse --once` keeps the batch in the dead-letter file with why; once the
// conflicting field is gone, `morse replay` stores every line of it.
func TestReplayAfterARealTypeConflict(t *testing.T) {
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	in.Exec(t, "CREATE DATABASE replaydb")
	require.Equal(t, 204, in.Write(t, "replaydb", "m v=0.5 1\n").Status, "v is a float")

	dir := t.TempDir()
	data := filepath.Join(dir, "data.lp")
	var lines []string
	for i := range 20 { // strings into the float field
		lines = append(lines, fmt.Sprintf(`m,k=%d v="s%d" %d`, i, i, 1000+i))
	}
	require.NoError(t, os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	dead := filepath.Join(dir, "dead.lp")
	conf := filepath.Join(dir, "morse.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`
[agent]
  omit_hostname = true
  precision = "ns" # keep the sub-second times; unset, a gather rounds them as Telegraf does
[[inputs.file]]
  files = [%q]
  data_format = "influx"
[[outputs.influxdb]]
  urls = [%q]
  database = "replaydb"
  skip_database_creation = true
  dead_letter_file = %q
`, data, in.URL(), dead)), 0o644))

	_, stderr, code := runMorse(t, "--once", "--config", conf)
	require.Zero(t, code, stderr)
	b, err := os.ReadFile(dead)
	require.NoError(t, err)
	text := string(b)
	require.Contains(t, text, "output=influxdb reason=field_type_conflict metrics=20 dropped=20 of the batch's 20 metrics")
	require.Contains(t, text, `m,k=7 v="s7" 1007`)
	require.Equal(t, 21, strings.Count(text, "\n"), "a comment, then the batch")
	st, err := os.Stat(dead)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.Len(t, storedTimes(t, in), 1, "only the float point")

	// InfluxDB 1.6 keeps a field's type in the shard even after DROP MEASUREMENT, so the
	// conflict goes with the database.
	in.Exec(t, "DROP DATABASE replaydb")
	in.Exec(t, "CREATE DATABASE replaydb")
	stdout, stderr, code := runMorse(t, "replay", "--config", conf, "--output", "influxdb", dead)
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "replayed 20 metrics to outputs.influxdb: 20 written, 0 dropped again map[], 0 left unsent")
	require.Len(t, storedTimes(t, in), 20, "every line of the dead letter is stored")
}

func storedTimes(t *testing.T, in *testserver.Influx) []int64 {
	res := in.Query(t, "replaydb", "SELECT v FROM m")
	if len(res) == 0 || len(res[0].Series) == 0 {
		return nil
	}
	var times []int64
	for _, row := range res[0].Series[0].Values {
		times = append(times, row[0].(int64))
	}
	return times
}

// TestReplayToQuestDB: QuestDB 9.1.0 refuses lines that write strings into a LONG column;
// morse keeps exactly those lines in the dead letter, stores the rest, and once the
// conflicting table is dropped, `morse replay` stores every dead-lettered line.
func TestReplayToQuestDB(t *testing.T) {
	q := testserver.StartQuestDB(t, testserver.QuestDBOptions{})
	dir := t.TempDir()
	data := filepath.Join(dir, "data.lp")
	var lines []string
	for i := range 50 {
		v := fmt.Sprintf("%di", i)
		if i%10 == 3 {
			v = fmt.Sprintf(`"s%d"`, i) // five strings into the LONG column the first line makes
		}
		lines = append(lines, fmt.Sprintf("tq,k=k%d v=%s %d", i, v, 1700000000000000000+int64(i)*1000))
	}
	require.NoError(t, os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	dead := filepath.Join(dir, "dead.lp")
	conf := filepath.Join(dir, "morse.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`
[agent]
  omit_hostname = true
  precision = "ns" # keep the sub-second times; unset, a gather rounds them as Telegraf does
[[inputs.file]]
  files = [%q]
  data_format = "influx"
[[outputs.questdb]]
  addr = %q
  protocol = "http"
  dead_letter_file = %q
`, data, q.HTTPAddr(), dead)), 0o644))

	_, stderr, code := runMorse(t, "--once", "--config", conf)
	require.Zero(t, code, stderr)
	q.WaitCount(t, "tq", 45, 30*time.Second)
	b, err := os.ReadFile(dead)
	require.NoError(t, err)
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "#") {
			kept = append(kept, l)
		}
	}
	require.Len(t, kept, 5, "exactly the refused lines:\n%s", b)
	require.Contains(t, string(b), "reason=field_type_conflict")

	q.MustQuery(t, "DROP TABLE tq")
	stdout, stderr, code := runMorse(t, "replay", "--config", conf, "--output", "questdb", dead)
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "replayed 5 metrics to outputs.questdb: 5 written, 0 dropped again map[], 0 left unsent")
	q.WaitCount(t, "tq", 5, 30*time.Second)
}
