package influxdb

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/inputs/internal/gathertest"
)

func newPlugin(t *testing.T, config string) *InfluxDB {
	t.Helper()
	i := New()
	md, err := toml.Decode(config, i)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, i.Validate())
	require.NoError(t, i.Init())
	return i
}

func gather(t *testing.T, config string) *testutil.Accumulator {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, newPlugin(t, config).Gather(testutil.Context(t), acc))
	return acc
}

// TestDebugVarsOfInfluxDB reads /debug/vars of a real InfluxDB 1.6.7 that holds two
// databases, and of the same server paused: Telegraf's measurements, tags and types (the
// golden list), the shards counted, then a timeout reported with the URL.
func TestDebugVarsOfInfluxDB(t *testing.T) {
	srv := testserver.StartInfluxDB(t, testserver.InfluxOptions{})
	for _, db := range []string{"one", "two"} {
		srv.Exec(t, "CREATE DATABASE "+db)
		require.Equal(t, 204, srv.Write(t, db, "cpu,host=a usage=1\n").Status)
	}
	u := srv.URL() + "/debug/vars"
	acc := gather(t, `urls = ["`+u+`"]`)
	require.Empty(t, acc.Errors())
	require.Empty(t, testutil.LoadGolden(t, filepath.Join("testdata", "influxdb.golden")).Check(acc.Metrics()))

	shards, databases := 0, map[string]bool{}
	var nShards any
	for _, m := range acc.Metrics() {
		url, hasURL := m.Tag("url")
		switch m.Name() {
		case "influxdb":
			require.False(t, hasURL, "Telegraf's n_shards metric has no tags")
			nShards = testutil.FieldsOf(m)["n_shards"]
			continue
		case "influxdb_shard":
			shards++
		case "influxdb_database":
			db, _ := m.Tag("database")
			databases[db] = true
		}
		require.Equal(t, u, url, m.Name())
	}
	require.GreaterOrEqual(t, shards, 2, "a shard per database written")
	require.Equal(t, int64(shards), nShards)
	require.True(t, databases["one"] && databases["two"], "%v", databases)

	srv.Pause(t)
	defer srv.Unpause(t)
	acc = gather(t, `urls = ["`+u+`"]`+"\ntimeout = \"300ms\"")
	require.Zero(t, acc.NMetrics())
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "[url="+u+"]")
	require.ErrorContains(t, acc.Errors()[0], "Client.Timeout exceeded")
}

// TestAnswersOtherThan200 reads URLs of the InfluxDB test server that are no /debug/vars:
// an error answer gives its status and InfluxDB's message, a body that is not a JSON object
// an error of its own, and a server that is down a connection error, each with its URL and
// counted in internal_gather.
func TestAnswersOtherThan200(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	defer testserver.StopSharedNginx()
	down := "http://" + testutil.FreeAddr(t) + "/debug/vars"
	urls := []string{ngx.URL("/status/404"), ngx.URL("/index.html"), down}
	acc := gather(t, fmt.Sprintf("urls = [%q, %q, %q]", urls[0], urls[1], urls[2]))
	require.Zero(t, acc.NMetrics())
	var msgs []string
	for _, err := range acc.Errors() {
		msgs = append(msgs, err.Error())
	}
	joined := strings.Join(msgs, "\n")
	require.Len(t, msgs, 3, joined)
	require.Contains(t, joined, "[url="+urls[0]+"]: 404 Not Found")
	require.Contains(t, joined, "[url="+urls[1]+"]: invalid character '<'")
	require.Contains(t, joined, "[url="+urls[2]+"]: ")
	require.Contains(t, joined, "connection refused")

	c := gathertest.Counters(t, "influxdb", newPlugin(t, fmt.Sprintf("urls = [%q]", down)))
	require.Equal(t, int64(1), c["errors"])
}

// TestDecodeSkipsOtherShapes: entries that are not points, points without values and
// values that are no scalars are skipped, the rest kept, as Telegraf does.
func TestDecodeSkipsOtherShapes(t *testing.T) {
	doc := `{"a": "text", "b": [1, 2], "c": {"name": "x"}, "d": {"name": "y", "values": {}},
"e": {"name": "shard", "tags": {"id": "1"}, "values": {"n": 3, "s": "on", "b": true, "nil": null, "obj": {}}},
"cmdline": ["influxd", "-config", "x.conf"], "system": {"currentTime": "now", "started": "then", "uptime": 42},
"memstats": {"Alloc": 1, "NumGC": 2, "PauseNs": [10, 20, 30], "GCCPUFraction": 0.5}}`
	type rec struct {
		name   string
		fields map[string]any
		tags   map[string]string
	}
	var got []rec
	require.NoError(t, decodeVars(strings.NewReader(doc), func(name string, fields map[string]any, tags map[string]string) {
		got = append(got, rec{name, fields, tags})
	}))
	require.Len(t, got, 5)
	require.Equal(t, rec{"influxdb_shard", map[string]any{"n": float64(3), "s": "on", "b": true}, map[string]string{"id": "1"}}, got[0])
	require.Equal(t, "influxd -config x.conf", got[1].fields["value"])
	require.Equal(t, uint64(42), got[2].fields["uptime"])
	require.Equal(t, int64(20), got[3].fields["pause_ns"], "the last of NumGC pauses")
	require.Equal(t, rec{"influxdb", map[string]any{"n_shards": int64(1)}, nil}, got[4])

	err := decodeVars(strings.NewReader(`[1]`), func(string, map[string]any, map[string]string) {})
	require.EqualError(t, err, "document root must be a JSON object")
}
