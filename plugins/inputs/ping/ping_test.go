package ping

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// configured returns the plugin with a golden list's config and urls decoded, validated
// and initialised as the engine does.
func configured(t *testing.T, config string, urls ...string) *Ping {
	t.Helper()
	p := New()
	md, err := toml.Decode(config, p)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	p.URLs = urls
	p.SetLogger((&testutil.Logs{}).Logger())
	require.NoError(t, p.Validate())
	require.NoError(t, p.Init())
	return p
}

func gather(t *testing.T, p *Ping) *testutil.Accumulator {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, p.Gather(testutil.Context(t), acc))
	return acc
}

// byURL returns the metric of each url; every host gives exactly one.
func byURL(t *testing.T, acc *testutil.Accumulator) map[string]morse.Metric {
	t.Helper()
	out := map[string]morse.Metric{}
	for _, m := range acc.MetricsNamed("ping") {
		u, _ := m.Tag("url")
		require.NotContains(t, out, u, "one metric per host")
		out[u] = m
	}
	return out
}

// requirePingPath fails with the way to install iputils-ping when it is missing.
func requirePingPath(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("ping")
	require.NoError(t, err, "run scripts/ensure-ping.sh (make test-deps) to install Debian's iputils-ping")
}

// checkLoopback checks the replies of 127.0.0.1 and ::1 against the golden list: two
// requests, two replies, the loopback's TTL of 64, and round trips in order.
func checkLoopback(t *testing.T, golden string, acc *testutil.Accumulator) {
	t.Helper()
	require.Empty(t, acc.Errors())
	shapes := testutil.LoadGolden(t, golden)
	require.Empty(t, shapes.Check(acc.Metrics()))
	got := byURL(t, acc)
	require.Len(t, got, 2)
	for _, host := range []string{"127.0.0.1", "::1"} {
		f := testutil.FieldsOf(got[host])
		require.Equal(t, int64(0), f["result_code"], host)
		require.Equal(t, int64(2), f["packets_transmitted"], host)
		require.Equal(t, int64(2), f["packets_received"], host)
		require.Equal(t, 0.0, f["percent_packet_loss"], host)
		require.Equal(t, int64(64), f["ttl"], host)
		lo, avg, hi := f["minimum_response_ms"].(float64), f["average_response_ms"].(float64), f["maximum_response_ms"].(float64)
		require.True(t, 0 < lo && lo <= avg && avg <= hi && hi < 1000, "%s: %v <= %v <= %v", host, lo, avg, hi)
	}
}

func TestExecPingsLoopback(t *testing.T) {
	requirePingPath(t)
	golden := filepath.Join("testdata", "ping_exec.golden")
	p := configured(t, testutil.LoadGolden(t, golden).Config, "127.0.0.1", "::1")
	checkLoopback(t, golden, gather(t, p))
}

func TestNativePingsLoopbackOverRawSockets(t *testing.T) {
	golden := filepath.Join("testdata", "ping_native.golden")
	p := configured(t, testutil.LoadGolden(t, golden).Config, "127.0.0.1", "::1")
	acc := gather(t, p)
	checkLoopback(t, golden, acc)
	require.Equal(t, int32(1), p.raw.Load(), "the tests run as root: the raw socket is open to them")
	for host, m := range byURL(t, acc) {
		f := testutil.FieldsOf(m)
		p50, p90 := f["percentile50_ms"].(float64), f["percentile90_ms"].(float64)
		require.True(t, f["minimum_response_ms"].(float64) <= p50 && p50 <= p90 && p90 <= f["maximum_response_ms"].(float64), host)
	}
}

// setPingGroupRange sets net.ipv4.ping_group_range, which governs the ICMP datagram
// sockets of IPv4 and IPv6 alike, and puts the old value back when the test ends.
func setPingGroupRange(t *testing.T, value string) {
	t.Helper()
	const path = "/proc/sys/net/ipv4/ping_group_range"
	old, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(value), 0o644), "the tests run as root")
	t.Cleanup(func() { require.NoError(t, os.WriteFile(path, old, 0o644)) })
}

// TestNativePingsLoopbackOverDatagramSockets: without the raw socket (as when the agent
// lacks CAP_NET_RAW), the native method pings through the kernel's ICMP datagram sockets
// when ping_group_range lets the agent's group use them, and says what to change when not.
func TestNativePingsLoopbackOverDatagramSockets(t *testing.T) {
	golden := filepath.Join("testdata", "ping_native.golden")
	config := testutil.LoadGolden(t, golden).Config

	setPingGroupRange(t, "0 0")
	p := configured(t, config, "127.0.0.1", "::1")
	p.forceDatagram = true
	checkLoopback(t, golden, gather(t, p))

	setPingGroupRange(t, "1 0") // no group at all
	acc := gather(t, p)
	require.Len(t, acc.Errors(), 2)
	for _, err := range acc.Errors() {
		require.ErrorIs(t, err, ErrPermission)
	}
	for host, m := range byURL(t, acc) {
		require.Equal(t, map[string]any{"result_code": int64(2)}, testutil.FieldsOf(m), host)
	}
}

// TestExecFailureIsResultCode2: a ping that fails for another reason than missing replies
// (here an option iputils does not have) is reported with its output and result_code 2.
func TestExecFailureIsResultCode2(t *testing.T) {
	requirePingPath(t)
	p := configured(t, `arguments = ["-c", "1", "--no-such-option"]`, "127.0.0.1")
	acc := gather(t, p)
	require.Len(t, acc.Errors(), 1)
	require.Contains(t, acc.Errors()[0].Error(), `host "127.0.0.1": exit status 2`)
	require.Equal(t, map[string]any{"result_code": int64(2)}, testutil.FieldsOf(byURL(t, acc)["127.0.0.1"]))
}

// TestExecLossKeepsExitStatus: iputils' ping exits 1 when replies are missing; as in
// Telegraf the output is parsed and result_code is 1. Loopback always answers, so a script
// prints what ping prints then (Telegraf's test input) beside the real runs above.
func TestExecLossKeepsExitStatus(t *testing.T) {
	script := filepath.Join(t.TempDir(), "ping")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\ncat <<'X'\n"+lossyOutput+"X\nexit 1\n"), 0o755))
	p := configured(t, `binary = "`+script+`"`, "www.google.com")
	acc := gather(t, p)
	require.Empty(t, acc.Errors())
	require.Equal(t, map[string]any{
		"result_code": int64(1), "packets_transmitted": int64(5), "packets_received": int64(3),
		"percent_packet_loss": 40.0, "ttl": int64(63), "minimum_response_ms": 35.225,
		"average_response_ms": 44.033, "maximum_response_ms": 51.806, "standard_deviation_ms": 5.325,
	}, testutil.FieldsOf(byURL(t, acc)["www.google.com"]))
}

func TestArgsAreTelegrafs(t *testing.T) {
	p := configured(t, `count = 3
ping_interval = "0.5s"
timeout = "2s"
deadline = "7s"
interface = "lo"`)
	require.Equal(t, []string{"-c", "3", "-n", "-s", "16", "-i", "0.5", "-W", "2", "-w", "7", "-I", "lo", "h"}, p.args("h"))
	p = configured(t, `arguments = ["-c", "3"]`)
	require.Equal(t, []string{"-c", "3", "h"}, p.args("h"))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	p := New()
	p.Method, p.Percentiles, p.Size, p.Deadline = "icmp", []int{101}, 70000, -1
	err := p.Validate()
	for _, key := range []string{"method", "percentiles", "size", "ping_interval"} {
		require.ErrorContains(t, err, key+":")
	}
}

func TestPercentileIsR7(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	values := ms(10, 20, 30, 40, 50)
	require.Equal(t, 30*time.Millisecond, percentile(values, 50))
	require.Equal(t, 46*time.Millisecond, percentile(values, 90))
	require.Equal(t, 50*time.Millisecond, percentile(values, 100))
	require.Equal(t, 10*time.Millisecond, percentile(values, 0))
	require.Zero(t, percentile(nil, 50))
}
