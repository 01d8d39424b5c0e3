package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestReplayToIoTDB: IoTDB 2.0.1-beta refuses a DOUBLE into the INT64 series that holds v
// (507) and stores the rest of each request; morse, with its disk buffer, keeps exactly the
// refused lines in the dead letter, and once the series is deleted, `morse replay` stores
// every one of them.
func TestReplayToIoTDB(t *testing.T) {
	srv := testserver.StartIoTDB(t, testserver.IoTDBOptions{})
	srv.NonQuery(t, "create timeseries root.rp.tq.v with datatype=INT64")
	dir := t.TempDir()
	data := filepath.Join(dir, "data.lp")
	var lines []string
	for i := range 50 {
		v := fmt.Sprintf("%di", i)
		if i%10 == 3 {
			v = fmt.Sprintf("%d.5", i) // five doubles into the INT64 series
		}
		lines = append(lines, fmt.Sprintf("tq v=%s,n=%di %d", v, i, 1700000000000000000+int64(i)*1000000))
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
[[outputs.iotdb]]
  url = %q
  database = "root.rp"
  timestamp_precision = "millisecond"
  dead_letter_file = %q
  buffer_strategy = "disk"
  buffer_directory = %q
`, data, srv.URL(), dead, filepath.Join(dir, "buffer"))), 0o644))

	_, stderr, code := runMorse(t, "--once", "--config", conf)
	require.Zero(t, code, stderr)
	b, err := os.ReadFile(dead)
	require.NoError(t, err)
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "#") {
			kept = append(kept, l)
		}
	}
	require.Len(t, kept, 5, "exactly the refused lines:\n%s", b)
	require.Contains(t, string(b), "output=iotdb reason=field_type_conflict")
	require.Equal(t, []any{json.Number("45"), json.Number("50")}, counts(t, srv))

	srv.NonQuery(t, "delete timeseries root.rp.tq.v")
	stdout, stderr, code := runMorse(t, "replay", "--config", conf, "--output", "iotdb", dead)
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "replayed 5 metrics to outputs.iotdb: 5 written, 0 dropped again map[], 0 left unsent")
	require.Equal(t, []any{json.Number("5"), json.Number("50")}, counts(t, srv))
}

// counts is count(v) and count(n) of the test's device.
func counts(t *testing.T, srv *testserver.IoTDB) []any {
	r := srv.Query(t, "select count(v), count(n) from root.rp.tq")
	var out []any
	for _, col := range r.Values {
		out = append(out, col[0])
	}
	return out
}
