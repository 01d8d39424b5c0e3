package redis

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedRedis()
	os.Exit(code)
}

// gatherOnce builds the plugin from config, gathers once within ctx and stops it.
func gatherOnce(t *testing.T, ctx context.Context, config string) *testutil.Accumulator {
	t.Helper()
	r := &Redis{}
	md, err := toml.Decode(config, r)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, r.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, r.Start(ctx, acc))
	defer r.Stop()
	require.NoError(t, r.Gather(ctx, acc))
	return acc
}

// redisCmd runs one command on the shared server.
func redisCmd(t *testing.T, args ...any) any {
	t.Helper()
	srv := testserver.SharedRedis(t)
	c, err := dial(testutil.Context(t), "tcp", srv.Addr, nil, "", "")
	require.NoError(t, err)
	defer c.close()
	v, err := c.do(testutil.Context(t), args...)
	if !errors.Is(err, errNil) {
		require.NoError(t, err)
	}
	return v
}

func TestFieldsAndTypes(t *testing.T) {
	srv := testserver.SharedRedis(t)
	redisCmd(t, "SET", "morse-key", "41")
	redisCmd(t, "INCR", "morse-key")
	redisCmd(t, "GET", "morse-key")
	redisCmd(t, "GET", "missing-key")
	_, port, _ := net.SplitHostPort(srv.Addr)
	acc := gatherOnce(t, testutil.Context(t), `servers = ["tcp://`+srv.Addr+`"]`)
	require.Empty(t, acc.Errors())
	shapes, err := testutil.LoadShapes("testdata/redis.golden")
	require.NoError(t, err)
	require.Empty(t, shapes.Check(acc.Metrics()))

	m := acc.MetricsNamed("redis")
	require.Len(t, m, 1)
	tags, fields := testutil.TagsOf(m[0]), testutil.FieldsOf(m[0])
	require.Equal(t, map[string]string{"server": "127.0.0.1", "port": port, "replication_role": "master"}, tags)
	require.IsType(t, float64(0), fields["allocator_frag_bytes"], "Telegraf's float, an integer on the wire")
	require.IsType(t, "", fields["redis_version"])
	require.IsType(t, int64(0), fields["uptime"])
	require.IsType(t, int64(0), fields["clients"])
	require.IsType(t, float64(0), fields["keyspace_hitrate"])
	require.Greater(t, fields["keyspace_hitrate"].(float64), 0.0)
	require.NotContains(t, fields, "used_memory_human")
	require.NotContains(t, fields, "tcp_port", "the Server section but three keys is left out")
	require.Contains(t, fields, "rdb_last_save_time_elapsed")

	ks := acc.MetricsNamed("redis_keyspace")
	require.Len(t, ks, 1)
	require.Equal(t, "db0", testutil.TagsOf(ks[0])["database"])
	require.GreaterOrEqual(t, testutil.FieldsOf(ks[0])["keys"], int64(1))

	var incr map[string]any
	for _, c := range acc.MetricsNamed("redis_cmdstat") {
		if testutil.TagsOf(c)["command"] == "incr" {
			incr = testutil.FieldsOf(c)
		}
	}
	require.NotNil(t, incr, "cmdstat of INCR")
	require.GreaterOrEqual(t, incr["calls"], int64(1))
	require.IsType(t, float64(0), incr["usec_per_call"])
	require.True(t, acc.HasMeasurement("redis_latency_percentiles_usec"))
}

func TestCommandsUnixAndACL(t *testing.T) {
	srv := testserver.SharedRedis(t)
	redisCmd(t, "SET", "morse-float", "2.5")
	redisCmd(t, "SET", "morse-text", "hello")
	acc := gatherOnce(t, testutil.Context(t), `servers = ["unix://`+srv.Socket+`"]
username = "`+testserver.RedisUser+`"
password = "`+testserver.RedisPassword+`"
[[commands]]
  command = ["get", "morse-float"]
  field = "f"
  type = "float"
[[commands]]
  command = ["get", "morse-text"]
  field = "s"
  type = "string"
[[commands]]
  command = ["dbsize"]
  field = "n"
  type = "integer"
`)
	require.Empty(t, acc.Errors())
	c := acc.MetricsNamed("redis_commands")
	require.Len(t, c, 1)
	require.Equal(t, map[string]string{"socket": srv.Socket}, testutil.TagsOf(c[0]))
	f := testutil.FieldsOf(c[0])
	require.Equal(t, 2.5, f["f"])
	require.Equal(t, "hello", f["s"])
	require.IsType(t, int64(0), f["n"])
}

func TestTLSAndURLCredentials(t *testing.T) {
	srv := testserver.SharedRedis(t)
	acc := gatherOnce(t, testutil.Context(t), `servers = ["tcp://`+testserver.RedisUser+`:`+testserver.RedisPassword+`@`+srv.TLSAddr+`"]
tls_ca = "`+srv.Certs.CA+`"`)
	require.Empty(t, acc.Errors())
	require.True(t, acc.HasMeasurement("redis"))
}

// TestFailures: a down server, a wrong password and a server that never answers each add
// one clear error per gather, and the good server beside them is still gathered.
func TestFailures(t *testing.T) {
	srv := testserver.SharedRedis(t)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hole.Close()
	down := testutil.FreeAddr(t)
	ctx, cancel := context.WithTimeout(testutil.Context(t), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	acc := gatherOnce(t, ctx, `servers = ["tcp://`+srv.Addr+`", "tcp://`+down+`", "tcp://`+hole.Addr().String()+`", "tcp://morse:wrong@`+srv.Addr+`"]`)
	require.Less(t, time.Since(start), 5*time.Second, "the gather's deadline bounds a silent server")
	require.Len(t, acc.MetricsNamed("redis"), 1, "the good server is gathered")
	var msgs []string
	for _, e := range acc.Errors() {
		msgs = append(msgs, e.Error())
	}
	require.Len(t, msgs, 3, "%q", msgs)
	joined := strings.Join(msgs, "\n")
	require.Contains(t, joined, "redis "+down+": ")
	require.Contains(t, joined, "connection refused")
	require.Contains(t, joined, "redis "+hole.Addr().String()+": ")
	require.Contains(t, joined, "i/o timeout")
	require.Contains(t, joined, "WRONGPASS")
}

func TestValidate(t *testing.T) {
	r := &Redis{Commands: []Command{{Command: []any{"get"}, Field: "x", Type: "bool"}}, Servers: []string{"tcp://%zz"}}
	err := r.Validate()
	require.ErrorContains(t, err, "unknown result type")
	require.ErrorContains(t, err, "unable to parse")
	var _ morse.Input = r
}
