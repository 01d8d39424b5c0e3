package file

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// TestPrometheusFormat reads a scrape saved to a file, as Telegraf's file input with
// data_format "prometheus" does: its own default metric version 2 and a bad line reported
// while the others are kept.
func TestPrometheusFormat(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "scrape.prom"), "# TYPE http_requests_total counter\n"+
		"http_requests_total{code=\"200\"} 1027 1700000000000\n"+
		"http_requests_total{code=\"500\" 3 1700000000000\n"+
		"# TYPE rpc summary\nrpc{quantile=\"0.5\"} 4773 1700000000000\nrpc_sum 10 1700000000000\nrpc_count 3 1700000000000\n")
	f := New()
	f.Files = []string{filepath.Join(dir, "scrape.prom")}
	f.DataFormat = "prometheus"
	acc := gather(t, f)
	require.Equal(t, []string{
		"prometheus rpc_count=float:3,rpc_sum=float:10 1700000000000000000",
		"prometheus,code=200 http_requests_total=float:1027 1700000000000000000",
		"prometheus,quantile=0.5 rpc=float:4773 1700000000000000000",
	}, testutil.Canon(acc.Metrics()))
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], `line 3, column 32: unexpected end of label value "500"`)
}

// TestGraphiteFormat reads Graphite lines from a file with templates.
func TestGraphiteFormat(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "g.txt"), "servers.web01.cpu.load 0.5 1700000000\nservers.web02.cpu.load;dc=eu 1.5 1700000001\n")
	f := New()
	f.Files = []string{filepath.Join(dir, "g.txt")}
	f.DataFormat = "graphite"
	f.Graphite = dataformat.Graphite{Separator: "_", Templates: []string{"servers.* .host.measurement*"}}
	acc := gather(t, f)
	require.Empty(t, acc.Errors())
	require.Equal(t, []string{
		"cpu_load,dc=eu,host=web02 value=float:1.5 1700000001000000000",
		"cpu_load,host=web01 value=float:0.5 1700000000000000000",
	}, testutil.Canon(acc.Metrics()))
}
