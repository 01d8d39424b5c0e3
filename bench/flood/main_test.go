package flood

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--duration", "2s", "--only", "syslog-tcp-4, statsd-udp-16", "--agent-core", "-1", "--load-core", "-1"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, o.duration)
	names := []string{}
	for _, sc := range o.selected() {
		names = append(names, sc.Name)
	}
	require.Equal(t, []string{"statsd-udp-16", "syslog-tcp-4"}, names, "in the order of the scenarios")

	_, err = parseFlags([]string{"--only", "udp-7", "--duration", "11m", "--hosts", "0", "--agent-core", "4096"}, io.Discard)
	require.ErrorContains(t, err, `no scenario "udp-7"`)
	require.ErrorContains(t, err, "--duration 11m0s")
	require.ErrorContains(t, err, "--hosts 0")
	require.ErrorContains(t, err, "cores 4096")
}

func TestResultAccountsForUDPDrops(t *testing.T) {
	ty := newTally("", "")
	ty.feed([]byte("bench_a,metric_type=counter value=600i 1\n" +
		"internal_statsd udp_packets_dropped=5i,parse_errors=0i 1\ninternal_write metrics_dropped=0i 1\n"))
	r := result{Scenario: scenario{Protocol: "udp"}, LinesSent: 1600, Requests: 100, KernelDrops: 57}
	r.setCaptured(ty, 2*time.Second)
	require.Equal(t, int64(600), r.Captured)
	require.InDelta(t, 37.5, r.CapturePct, 1e-9)
	require.InDelta(t, 300.0, r.LinesPerCPUSec, 1e-9)
	require.Equal(t, int64(5), r.InputDrops)
	require.Equal(t, int64(1600-600-(57+5)*16), r.Unaccounted)

	tcp := result{Scenario: scenario{Protocol: "tcp"}, LinesSent: 700, Requests: 7}
	tcp.setCaptured(ty, time.Second)
	require.Equal(t, int64(100), tcp.Unaccounted, "TCP drops nothing: what is missing is missing")
}

func TestMarkdown(t *testing.T) {
	r := &report{CPUs: 2, AgentCore: 1, DurationSec: 5, Results: []result{
		{Scenario: scenario{Name: "udp-16", Protocol: "udp", LinesPerRequest: 16, UDPPayload: 512}, LinesSent: 8845616,
			Captured: 637664, CapturePct: 7.21, AgentCPUSec: 1.39, LinesPerCPUSec: 458751.3, KernelDrops: 510000, LoadAvg1: 19.5},
		{Scenario: scenario{Name: "tcp-4", Protocol: "tcp"}, Error: "morse exited\nbadly"},
		{Scenario: scenario{Name: "udp-1", Protocol: "udp"}, OutputDrops: 3},
	}}
	md := r.markdown()
	require.Contains(t, md, "| udp-16 | 16 (datagrams of at most 512 bytes) | 8,845,616 | 637,664 | 7.2% | 1.39 | 458,751 | 510,000 | 0 | 0 | 19.5 |\n")
	require.Contains(t, md, "| tcp-4 | 0 | failed: morse exited badly |")
	require.Contains(t, md, "udp-1: the output dropped 3 metrics")
	require.Equal(t, "-1,234", group(-1234))
	require.Equal(t, "100", group(100))
	require.Equal(t, "56%", pct(56.4))
	require.Equal(t, 1.25, parseLoadAvg("1.25 0.80 0.50 2/345 6789\n"))
	require.Equal(t, -1.0, parseLoadAvg(""))
}

// TestFloodCountsWhatTheAgentCaptured runs the harness on the real agent, with the flood
// sent from this process (the load tool's own code, bounded in lines and time) instead of
// the morse-bench binary: over TCP nothing may be lost and the count must be exact, for
// statsd and syslog; over UDP whatever was not captured must be in the kernel's or the
// input's drop counters.
func TestFloodCountsWhatTheAgentCaptured(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "morse")
	start := time.Now()
	require.NoError(t, testutil.BuildMorse(ctx, bin))
	t.Logf("built the agent in %s", time.Since(start).Round(time.Millisecond))
	o := &options{morseBin: bin, duration: 10 * time.Second, hosts: 10, agentCore: -1, loadCore: -1}
	e := &env{o: o, dir: dir, load: inProcessLoad(t, 20_000)}
	for _, sc := range []scenario{
		{Name: "statsd-tcp", Input: "statsd", Protocol: "tcp", Connections: 2, LinesPerRequest: 100},
		{Name: "statsd-udp", Input: "statsd", Protocol: "udp", Connections: 1, LinesPerRequest: 1, UDPPayload: 64},
		{Name: "syslog-tcp", Input: "syslog", Protocol: "tcp", Connections: 2, LinesPerRequest: 100},
	} {
		start := time.Now()
		res := e.run(ctx, sc)
		t.Logf("%s: %+v in %s", sc.Name, res, time.Since(start).Round(time.Millisecond))
		require.Empty(t, res.Error, sc.Name)
		require.Equal(t, int64(20_000), res.LinesSent, sc.Name)
		require.Positive(t, res.Captured, sc.Name)
		require.Zero(t, res.Unaccounted, "%s: captured %d, kernel drops %d, input drops %d", sc.Name,
			res.Captured, res.KernelDrops, res.InputDrops)
		require.Zero(t, res.OutputDrops, sc.Name)
		require.Positive(t, res.AgentCPUSec, sc.Name)
		require.Zero(t, res.ParseErrors, sc.Name)
		if sc.Protocol == "tcp" {
			require.Equal(t, res.LinesSent, res.Captured)
		}
	}
}

// inProcessLoad sends lines StatsD lines or syslog messages per scenario with the load
// tool's code.
func inProcessLoad(t *testing.T, lines int64) loadFunc {
	return func(ctx context.Context, sc scenario, addr string) (*loadgen.Report, time.Duration, error) {
		generate := loadgen.GenerateStatsd
		if sc.Input == "syslog" {
			generate = loadgen.GenerateSyslog
		}
		pool, err := generate(loadgen.GenOptions{Seed: 1, Hosts: 10, Lines: 1000})
		require.NoError(t, err)
		cfg := loadgen.Config{Transport: sc.Protocol, Addr: addr, Connections: sc.Connections,
			LinesPerRequest: sc.LinesPerRequest, UDPPayload: sc.UDPPayload, Lines: lines, Duration: 10 * time.Second}
		require.NoError(t, cfg.Validate())
		rep, err := loadgen.Run(ctx, cfg, pool)
		require.Zero(t, rep.FailedLines, strings.Join(rep.ErrorSamples, "; "))
		return &rep, 0, err
	}
}
