package postgresql

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedPostgres()
	os.Exit(code)
}

func gatherOnce(t *testing.T, ctx context.Context, config string) (*testutil.Accumulator, error) {
	t.Helper()
	p := New()
	md, err := toml.Decode(config, p)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, p.Init())
	defer p.Stop()
	acc := &testutil.Accumulator{}
	return acc, p.Gather(ctx, acc)
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestFieldsAndTypes(t *testing.T) {
	srv := testserver.SharedPostgres(t)
	acc, err := gatherOnce(t, testutil.Context(t), `address = "`+srv.KeyValue("sslmode=disable dbname=postgres")+`"`)
	require.NoError(t, err)
	require.Empty(t, acc.Errors())
	shapes, err := testutil.LoadShapes("testdata/postgresql.golden")
	require.NoError(t, err)
	require.Empty(t, shapes.Check(acc.Metrics()))
	byDB := map[string]map[string]any{}
	for _, m := range acc.MetricsNamed("postgresql") {
		tags := testutil.TagsOf(m)
		require.Equal(t, "host=127.0.0.1 port="+portOf(srv.Addr)+" user="+testserver.PostgresUser+" dbname=postgres", tags["server"],
			"the password and sslmode are not in the tag")
		fields := testutil.FieldsOf(m)
		if _, bg := fields["buffers_alloc"]; bg {
			require.Equal(t, "postgres", tags["db"], "pg_stat_bgwriter's row has the connection's database")
			continue
		}
		byDB[tags["db"]] = fields
	}
	require.Contains(t, byDB, "postgres_global", "PostgreSQL 12+'s row of the shared objects")
	require.Contains(t, byDB, "template1")
	pg := byDB["postgres"]
	require.IsType(t, int64(0), pg["datid"], "database/sql hands an oid over as int64")
	require.IsType(t, int64(0), pg["xact_commit"])
	require.IsType(t, float64(0), pg["blk_read_time"])
	require.Equal(t, "postgres", pg["datname"])
	require.NotContains(t, pg, "stats_reset")
}

func TestDatabasesURLAndTLS(t *testing.T) {
	srv := testserver.SharedPostgres(t)
	acc, err := gatherOnce(t, testutil.Context(t), `address = "postgres://`+testserver.PostgresUser+`:`+testserver.PostgresPassword+`@`+srv.Addr+
		`/template1?sslmode=verify-full&sslrootcert=`+srv.Certs.CA+`"
databases = ["postgres"]
prepared_statements = false
outputaddress = "db01"`)
	require.NoError(t, err)
	dbs := map[string]bool{}
	for _, m := range acc.MetricsNamed("postgresql") {
		require.Equal(t, "db01", testutil.TagsOf(m)["server"])
		dbs[testutil.TagsOf(m)["db"]] = true
	}
	require.Equal(t, map[string]bool{"postgres": true, "template1": true}, dbs, "postgres of databases, template1 the bgwriter's")

	acc, err = gatherOnce(t, testutil.Context(t), `address = "host=`+srv.SocketDir+` port=`+portOf(srv.Addr)+` user=`+testserver.PostgresUser+` dbname=postgres"
ignored_databases = ["template0", "template1"]`)
	require.NoError(t, err)
	for _, m := range acc.MetricsNamed("postgresql") {
		require.NotContains(t, []string{"template0", "template1"}, testutil.TagsOf(m)["db"])
	}
	// NOT IN leaves out the NULL datname of the shared objects too, as Telegraf's query does.
	require.Len(t, acc.MetricsNamed("postgresql"), 2, "postgres and the bgwriter")
}

// TestFailures: a down server, a wrong password and a server that never answers each fail
// the gather with a clear error, within the gather's deadline.
func TestFailures(t *testing.T) {
	srv := testserver.SharedPostgres(t)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hole.Close()
	down := testutil.FreeAddr(t)
	for _, c := range []struct{ addr, want string }{
		{"host=127.0.0.1 port=" + portOf(down) + " user=morse sslmode=disable", "connection refused"},
		{strings.Replace(srv.KeyValue("sslmode=disable"), testserver.PostgresPassword, "wrong", 1), "password authentication failed"},
		{"host=127.0.0.1 port=" + portOf(hole.Addr().String()) + " user=morse sslmode=disable", "timeout"},
	} {
		ctx, cancel := context.WithTimeout(testutil.Context(t), 500*time.Millisecond)
		start := time.Now()
		_, err := gatherOnce(t, ctx, `address = "`+c.addr+`"`)
		cancel()
		require.Less(t, time.Since(start), 5*time.Second)
		require.ErrorContains(t, err, "postgresql host=127.0.0.1 port=")
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "wrong", "the password is not in the error")
	}
}

func TestValidate(t *testing.T) {
	p := New()
	p.Address = "postgres://%zz"
	p.Databases, p.IgnoredDatabases = []string{"a"}, []string{"b"}
	err := p.Validate()
	require.ErrorContains(t, err, "address")
	require.ErrorContains(t, err, "ignored_databases")
}
