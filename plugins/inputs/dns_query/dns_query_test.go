package dnsquery

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedDnsmasq()
	os.Exit(code)
}

// gather builds the plugin from config (the body of [[inputs.dns_query]]), gathers once
// and returns each metric as its fields and its tags ("tag:" before the key), the errors
// reported, and the plugin's counters.
func gather(t *testing.T, config string) ([]map[string]any, []error, *selfstat.PluginStats) {
	t.Helper()
	d := New()
	md, err := toml.Decode(config, d)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, d.Init())
	st := selfstat.NewPluginStats(nil, "internal_dns_query", nil)
	d.SetStats(st)
	acc := &testutil.Accumulator{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, d.Gather(ctx, acc))
	var out []map[string]any
	for _, m := range acc.Metrics() {
		require.Equal(t, "dns_query", m.Name())
		f := testutil.FieldsOf(m)
		for k, v := range testutil.TagsOf(m) {
			f["tag:"+k] = v
		}
		out = append(out, f)
	}
	return out, acc.Errors(), st
}

// server is the config lines that point the plugin at the shared dnsmasq.
func server(t *testing.T) string {
	return `servers = ["127.0.0.1"]
port = ` + strconv.Itoa(testserver.SharedDnsmasq(t).Port) + "\n"
}

// requireSuccess checks the fields and tags every answered query has, with their types.
func requireSuccess(t *testing.T, m map[string]any, domain, recordType string) {
	t.Helper()
	require.Equal(t, "success", m["tag:result"])
	require.Equal(t, "NOERROR", m["tag:rcode"])
	require.Equal(t, domain, m["tag:domain"])
	require.Equal(t, recordType, m["tag:record_type"])
	require.Equal(t, "127.0.0.1", m["tag:server"])
	require.Equal(t, uint64(0), m["result_code"])
	require.Equal(t, int64(0), m["rcode_value"])
	ms, ok := m["query_time_ms"].(float64)
	require.True(t, ok, "query_time_ms is a float")
	require.Greater(t, ms, 0.0)
}

// TestRecordsFromDnsmasq asks a real dnsmasq for A, AAAA, MX and TXT records, over UDP and
// TCP, with include_fields.
func TestRecordsFromDnsmasq(t *testing.T) {
	t.Run("A over udp with first_ip", func(t *testing.T) {
		ms, errs, st := gather(t, server(t)+`domains = ["`+testserver.DNSHost+`"]
record_type = "A"
include_fields = ["first_ip"]`)
		require.Empty(t, errs)
		require.Len(t, ms, 1)
		requireSuccess(t, ms[0], testserver.DNSHost, "A")
		require.Equal(t, testserver.DNSHost+".", ms[0]["name"])
		require.Equal(t, testserver.DNSHostIPv4, ms[0]["ip"])
		require.NotContains(t, ms[0], "ip_0")
		require.Equal(t, int64(1), st.Counter("queries_success").Get())
	})
	t.Run("AAAA over tcp", func(t *testing.T) {
		ms, errs, _ := gather(t, server(t)+`domains = ["`+testserver.DNSHost+`"]
network = "tcp"
record_type = "AAAA"
include_fields = ["first_ip"]`)
		require.Empty(t, errs)
		requireSuccess(t, ms[0], testserver.DNSHost, "AAAA")
		require.Equal(t, testserver.DNSHostIPv6, ms[0]["ip"])
	})
	t.Run("all_ips", func(t *testing.T) {
		ms, errs, _ := gather(t, server(t)+`domains = ["`+testserver.DNSTwoAddrs+`"]
record_type = "A"
include_fields = ["all_ips"]`)
		require.Empty(t, errs)
		requireSuccess(t, ms[0], testserver.DNSTwoAddrs, "A")
		require.ElementsMatch(t, []any{"192.0.2.21", "192.0.2.22"}, []any{ms[0]["ip_0"], ms[0]["ip_1"]})
		require.NotContains(t, ms[0], "ip")
	})
	t.Run("MX", func(t *testing.T) {
		ms, errs, _ := gather(t, server(t)+`domains = ["`+testserver.DNSZone+`"]
record_type = "MX"`)
		require.Empty(t, errs)
		requireSuccess(t, ms[0], testserver.DNSZone, "MX")
		require.Equal(t, uint64(testserver.DNSMXPref), ms[0]["preference"], "uint16 becomes an unsigned field, as in Telegraf")
		require.Equal(t, testserver.DNSZone+".", ms[0]["name"])
	})
	t.Run("TXT", func(t *testing.T) {
		ms, errs, _ := gather(t, server(t)+`domains = ["`+testserver.DNSZone+`"]
record_type = "TXT"`)
		require.Empty(t, errs)
		requireSuccess(t, ms[0], testserver.DNSZone, "TXT")
		require.NotContains(t, ms[0], "name", "Telegraf adds no field for a TXT record")
	})
}

// TestNXDomain: a name that does not exist is an answer, not an error: result "error",
// rcode NXDOMAIN, nothing reported, as in Telegraf.
func TestNXDomain(t *testing.T) {
	ms, errs, st := gather(t, server(t)+`domains = ["`+testserver.DNSNXDomain+`", "`+testserver.DNSHost+`"]
record_type = "A"`)
	require.Empty(t, errs)
	require.Len(t, ms, 2)
	nx := ms[0]
	if nx["tag:domain"] != testserver.DNSNXDomain {
		nx = ms[1]
	}
	require.Equal(t, "error", nx["tag:result"])
	require.Equal(t, "NXDOMAIN", nx["tag:rcode"])
	require.Equal(t, int64(3), nx["rcode_value"])
	require.Equal(t, uint64(2), nx["result_code"])
	require.Equal(t, int64(1), st.Counter("queries_error").Get())
	require.Equal(t, int64(1), st.Counter("queries_success").Get())
}

// TestTimeoutAndRefused: a server that never answers gives result "timeout" after the
// timeout, without an error reported; a port with nothing on it gives "error", reported.
// Both are counted by result.
func TestTimeoutAndRefused(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0") // bound, never read
	require.NoError(t, err)
	defer silent.Close()
	ms, errs, st := gather(t, `servers = ["127.0.0.1"]
port = `+strconv.Itoa(silent.LocalAddr().(*net.UDPAddr).Port)+`
domains = ["example.org"]
record_type = "A"
timeout = "100ms"`)
	require.Empty(t, errs)
	require.Len(t, ms, 1)
	require.Equal(t, "timeout", ms[0]["tag:result"])
	require.Equal(t, uint64(1), ms[0]["result_code"])
	require.Equal(t, 0.0, ms[0]["query_time_ms"])
	require.NotContains(t, ms[0], "tag:rcode")
	require.NotContains(t, ms[0], "rcode_value")
	require.Equal(t, int64(1), st.Counter("queries_timeout").Get())

	ports, err := testutil.FreePorts("udp", 1)
	require.NoError(t, err)
	ms, errs, st = gather(t, `servers = ["127.0.0.1"]
port = `+strconv.Itoa(ports[0])+`
record_type = "A"
domains = ["example.org"]`)
	require.Len(t, errs, 1)
	require.Contains(t, errs[0].Error(), "A query for example.org to 127.0.0.1")
	require.Equal(t, "error", ms[0]["tag:result"])
	require.Equal(t, uint64(2), ms[0]["result_code"])
	require.Equal(t, int64(1), st.Counter("queries_error").Get())
}

// TestDefaultsAskTheRootForNS: without domains, "." is asked for NS whatever record_type
// says, as in Telegraf; dnsmasq, with no upstream, refuses it, which is reported.
func TestDefaultsAskTheRootForNS(t *testing.T) {
	ms, errs, _ := gather(t, server(t)+`record_type = "A"`)
	require.Len(t, ms, 1)
	require.Equal(t, ".", ms[0]["tag:domain"])
	require.Equal(t, "NS", ms[0]["tag:record_type"])
	require.Equal(t, "REFUSED", ms[0]["tag:rcode"])
	require.Len(t, errs, 1)
	require.Contains(t, errs[0].Error(), "invalid answer (REFUSED)")
}

// TestValidateReportsEveryProblem names each bad option.
func TestValidateReportsEveryProblem(t *testing.T) {
	d := New()
	d.Network, d.RecordType, d.IncludeFields, d.Port = "sctp", "XYZ", []string{"ips"}, 70000
	err := d.Validate()
	require.Error(t, err)
	for _, key := range []string{"network", "record_type", "include_fields", "port"} {
		require.Contains(t, err.Error(), key)
	}
	require.NoError(t, New().Validate())
}
