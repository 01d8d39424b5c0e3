package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	influxdblistener "github.com/morse-agent/morse/plugins/inputs/influxdb_listener"
	"github.com/morse-agent/morse/plugins/outputs/file"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
)

// escapedStrings are string field values as line protocol writes them: every escape
// sequence, and a lone backslash before other characters.
var escapedStrings = []string{
	`a\nb`, `a\tb`, `a\rb`, `a\\b`, `a\"b`, `\n\t\r`, `end\\`, `a\\nb`, `a\\\nb`,
	`a\xb`, `a\ b`, `a\,b`, `a\=b`, `a\é`, `\\\\`, `a\\\"b`,
	"raw\nnewline\\n", "raw\ttab\\t",
}

// TestStringFieldsStoredAsTheSinkStoresThem writes each value straight to a real InfluxDB
// 1.6.7, and through morse: inputs.influxdb_listener to outputs.influxdb, and to
// outputs.file, whose line protocol is then written to InfluxDB too. All three store the
// same strings: morse reads a string field as InfluxDB 1.x does.
func TestStringFieldsStoredAsTheSinkStoresThem(t *testing.T) {
	t.Parallel()
	in := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	for _, db := range []string{"direct", "via", "viafile"} {
		in.Exec(t, "CREATE DATABASE "+db)
	}
	var body strings.Builder
	for i, s := range escapedStrings {
		fmt.Fprintf(&body, "m,case=c%02d s=\"%s\" %d\n", i, s, i+1)
	}
	require.Equal(t, http.StatusNoContent, in.Write(t, "direct", body.String()).Status)

	cfg := config.DefaultConfig()
	cfg.Agent.OmitHostname = true
	cfg.Agent.FlushInterval = morse.Duration(50 * time.Millisecond)
	ln := influxdblistener.New()
	ln.ServiceAddress = "127.0.0.1:0"
	cfg.AddInput("influxdb_listener", ln)
	out := influxdb.New()
	out.URLs, out.Database, out.SkipDatabaseCreation = []string{in.URL()}, "via", true
	cfg.AddOutput("influxdb", out)
	path := filepath.Join(t.TempDir(), "out.lp")
	fo := file.New()
	fo.Files = []string{path}
	cfg.AddOutput("file", fo)
	a, stop := testserver.RunAgent(t, cfg)
	select {
	case <-a.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the agent did not start")
	}
	resp, err := http.Post("http://"+ln.Addr().String()+"/write", "text/plain", strings.NewReader(body.String()))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	n := int64(len(escapedStrings))
	require.Eventually(t, func() bool {
		for _, o := range a.Outputs() {
			if o.Stats.Written < n {
				return false
			}
		}
		return true
	}, time.Minute, 10*time.Millisecond)
	require.NoError(t, stop())

	written, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, in.Write(t, "viafile", string(written)).Status)
	direct := storedStrings(t, in, "direct")
	require.Len(t, direct, len(escapedStrings))
	require.Equal(t, direct, storedStrings(t, in, "via"), "through the listener and outputs.influxdb")
	require.Equal(t, direct, storedStrings(t, in, "viafile"), "through the listener and outputs.file")
	require.Equal(t, "a\\nb", direct["c00"], "InfluxDB 1.6.7 keeps a backslash and the letter")
	require.True(t, bytes.Contains(written, []byte(`s="a\\nb"`)), "outputs.file escapes the backslash, as Telegraf's serializer does")
}

// storedStrings returns the string s of every point in db, by its case tag.
func storedStrings(t *testing.T, in *testserver.Influx, db string) map[string]string {
	t.Helper()
	res := in.Query(t, db, `SELECT "s", "case" FROM "m"`)
	require.Len(t, res, 1)
	require.Len(t, res[0].Series, 1)
	got := map[string]string{}
	for _, row := range res[0].Series[0].Values {
		s, ok1 := row[1].(string)
		c, ok2 := row[2].(string)
		require.True(t, ok1 && ok2, "%v", row)
		got[c] = s
	}
	return got
}
