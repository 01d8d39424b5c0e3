package mysql

import (
	"context"
	"maps"
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
	testserver.StopSharedMariaDB()
	os.Exit(code)
}

// build decodes config into a new plugin and initialises it; the test stops it.
func build(t testing.TB, config string) *Mysql {
	t.Helper()
	m := New()
	md, err := toml.Decode(config, m)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, m.Init())
	t.Cleanup(m.Stop)
	return m
}

func gatherOnce(t *testing.T, ctx context.Context, config string) *testutil.Accumulator {
	t.Helper()
	m := build(t, config)
	acc := &testutil.Accumulator{}
	require.NoError(t, m.Gather(ctx, acc))
	return acc
}

// allOn is every gather_* option on, for MariaDB.
const allOn = `
metric_version = 2
interval_slow = "1s"
gather_table_schema = true
gather_process_list = true
gather_user_statistics = true
gather_info_schema_auto_inc = true
gather_innodb_metrics = true
gather_slave_status = true
gather_all_slave_channels = true
mariadb_dialect = true
gather_binary_logs = true
gather_global_variables = true
gather_table_io_waits = true
gather_table_lock_waits = true
gather_index_io_waits = true
gather_event_waits = true
gather_file_events_stats = true
gather_perf_events_statements = true
gather_perf_sum_per_acc_per_event = true
`

func TestFieldsAndTypes(t *testing.T) {
	srv := testserver.SharedMariaDB(t)
	srv.Exec(t, "SELECT name FROM "+testserver.MariaDBDatabase+".items WHERE name = 'a'")
	acc := gatherOnce(t, testutil.Context(t), `servers = ["`+srv.DSN("tls=false")+`"]`+allOn)
	require.Empty(t, acc.Errors())
	shapes, err := testutil.LoadShapes("testdata/mysql.golden")
	require.NoError(t, err)
	require.Empty(t, shapes.Check(acc.Metrics()))

	var status map[string]any
	for _, m := range acc.MetricsNamed("mysql") {
		require.Equal(t, srv.Addr, testutil.TagsOf(m)["server"])
		if f := testutil.FieldsOf(m); f["uptime"] != nil {
			status = f
		}
	}
	require.NotNil(t, status, "global status has uptime")
	require.IsType(t, int64(0), status["uptime"])
	vars := map[string]any{}
	var versionTag string
	for _, m := range acc.MetricsNamed("mysql_variables") {
		f := testutil.FieldsOf(m)
		require.LessOrEqual(t, len(f), 20+4, "Telegraf's batches of 20 (a map value adds a few)")
		maps.Copy(vars, f)
		if f["version"] != nil {
			versionTag = testutil.TagsOf(m)["version"]
		}
	}
	require.NotEmpty(t, vars, "interval_slow = 1s gathers the variables")
	require.Contains(t, vars["version"], "MariaDB")
	require.Equal(t, vars["version"], versionTag)
	require.Equal(t, int64(1), vars["have_ssl"], "have_ssl is 1 with TLS on")

	var auto map[string]any
	for _, m := range acc.MetricsNamed("mysql_table_schema") {
		if tg := testutil.TagsOf(m); tg["table"] == "items" && tg["column"] == "id" {
			auto = testutil.FieldsOf(m)
		}
	}
	require.Equal(t, map[string]any{"auto_increment_column": uint64(4), "auto_increment_column_max": uint64(4294967295)}, auto)
	require.True(t, acc.HasMeasurement("mysql_process_list"))
	require.True(t, acc.HasMeasurement("mysql_users"))
	require.True(t, acc.HasMeasurement("mysql_user_stats"))
	require.True(t, acc.HasMeasurement("mysql_innodb"))
	require.True(t, acc.HasMeasurement("mysql_perf_schema"))
	require.True(t, acc.HasMeasurement("mysql_table_schema_version"))
}

// TestDefaultsSkipVariables: without interval_slow the variables are not read, as in
// Telegraf; the status alone is.
func TestDefaultsSkipVariables(t *testing.T) {
	srv := testserver.SharedMariaDB(t)
	acc := gatherOnce(t, testutil.Context(t), `servers = ["`+srv.DSN("tls=false")+`"]`)
	require.Empty(t, acc.Errors())
	require.True(t, acc.HasMeasurement("mysql"))
	require.False(t, acc.HasMeasurement("mysql_variables"))
}

func TestTLSCustom(t *testing.T) {
	srv := testserver.SharedMariaDB(t)
	acc := gatherOnce(t, testutil.Context(t), `servers = ["`+srv.DSN("tls=custom")+`"]
tls_ca = "`+srv.Certs.CA+`"`)
	require.Empty(t, acc.Errors())
	require.True(t, acc.HasMeasurement("mysql"))
	for _, m := range acc.MetricsNamed("mysql") {
		if v, ok := testutil.FieldsOf(m)["ssl_cipher"]; ok {
			require.NotEmpty(t, v, "the session is encrypted")
		}
	}
}

// TestFailures: a down server, a wrong password and a server that never answers each add
// one clear error per gather, and the good server beside them is still gathered.
func TestFailures(t *testing.T) {
	srv := testserver.SharedMariaDB(t)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer hole.Close()
	down := testutil.FreeAddr(t)
	ctx, cancel := context.WithTimeout(testutil.Context(t), 500*time.Millisecond)
	defer cancel()
	wrong := strings.Replace(srv.DSN("tls=false"), testserver.MariaDBPassword, "wrong", 1)
	start := time.Now()
	acc := gatherOnce(t, ctx, `servers = ["`+srv.DSN("tls=false")+`", "tcp(`+down+`)/", "tcp(`+hole.Addr().String()+`)/", "`+wrong+`"]`)
	require.Less(t, time.Since(start), 5*time.Second, "the gather's deadline bounds a silent server")
	require.NotEmpty(t, acc.MetricsNamed("mysql"), "the good server is gathered")
	var msgs []string
	for _, e := range acc.Errors() {
		msgs = append(msgs, e.Error())
	}
	require.Len(t, msgs, 3, "%q", msgs)
	joined := strings.Join(msgs, "\n")
	require.Contains(t, joined, "mysql "+down+": ")
	require.Contains(t, joined, "connection refused")
	require.Contains(t, joined, "mysql "+hole.Addr().String()+": ")
	require.Contains(t, joined, "Access denied for user 'morse'")
}

func TestValidate(t *testing.T) {
	m := New()
	m.MetricVersion = 1
	m.Servers = append(m.Servers, "no-slash")
	err := m.Validate()
	require.ErrorContains(t, err, "metric_version")
	require.ErrorContains(t, err, "server 1")
}
