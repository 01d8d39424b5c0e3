package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
)

// startSinkCommand runs `morse-bench sink` in the test and returns its address. At cleanup it
// stops the sink and checks the final counters it prints.
func startSinkCommand(t *testing.T, args ...string) (addr string, final func() loadgen.SinkStats) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := realMain(ctx, append([]string{"sink"}, args...), pw, io.Discard)
		_ = pw.Close()
		done <- code
	}()
	out := bufio.NewReader(pr)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	var stats loadgen.SinkStats
	final = func() loadgen.SinkStats {
		cancel()
		rest, err := io.ReadAll(out)
		require.NoError(t, err)
		require.Equal(t, exitOK, <-done)
		require.NoError(t, json.Unmarshal(rest, &stats))
		return stats
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			final()
		}
	})
	return strings.TrimSpace(line), final
}

func TestSendToSinkAsJSON(t *testing.T) {
	addr, final := startSinkCommand(t, "--parse")
	var stdout, stderr bytes.Buffer
	args := []string{"load", "--addr", addr, "--lines", "5000", "--connections", "2", "--json", "--gzip"}
	require.Equal(t, exitOK, realMain(context.Background(), args, &stdout, &stderr), stderr.String())
	var rep loadgen.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	require.Equal(t, int64(5000), rep.Lines)
	require.Equal(t, map[string]int64{"204": 5}, rep.HTTPStatus)
	st := final()
	require.Equal(t, int64(5000), st.Lines)
	require.Equal(t, rep.WireBytes, st.WireBytes)
	require.Zero(t, st.ParseErrors)
}

// TestFailedLinesExitWithOne sends over TCP to a port nobody listens on.
func TestFailedLinesExitWithOne(t *testing.T) {
	addr := testutil.FreeAddr(t)
	var stdout bytes.Buffer
	code := realMain(context.Background(), []string{"load", "--transport", "tcp", "--addr", addr, "--lines", "10"}, &stdout, io.Discard)
	require.Equal(t, exitShort, code)
	require.Contains(t, stdout.String(), "failed      10 lines in 1 requests")
}

func TestSendPrintsAReadableReport(t *testing.T) {
	addr, _ := startSinkCommand(t)
	var stdout bytes.Buffer
	code := realMain(context.Background(), []string{"load", "--addr", addr, "--lines", "2500", "--rate", "1000000"}, &stdout, io.Discard)
	require.Equal(t, exitOK, code)
	require.Contains(t, stdout.String(), "sent 2,500 lines")
	require.Contains(t, stdout.String(), "HTTP 204: 3")
	require.Contains(t, stdout.String(), "failed      0 lines")
}

func TestSinkServesStats(t *testing.T) {
	addr, _ := startSinkCommand(t)
	resp, err := http.Post("http://"+addr+"/write?db=x", "text/plain", strings.NewReader("m v=1 1\nm v=2 2\n"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Get("http://" + addr + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st loadgen.SinkStats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.Equal(t, int64(2), st.Lines)
	require.Equal(t, int64(1), st.Requests)
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--addr", "127.0.0.1:8086", "--lines", "1"},
		{"send"},
		{"load", "--addr", "10.0.0.1:80", "--lines", "1"},
		{"load", "--addr", "example.com:80", "--lines", "1"},
		{"load", "--addr", "127.0.0.1:8086"},
		{"load", "--addr", "127.0.0.1:8086", "--duration", "11m"},
		{"load", "--addr", "127.0.0.1:8086", "--lines", "1", "--transport", "sctp"},
		{"load", "--addr", "127.0.0.1:8086", "--lines", "1", "--verify", "http://10.0.0.1:8086"},
		{"load", "--addr", "127.0.0.1:8086", "--lines", "1", "--verify", "http://127.0.0.1:8086", "--path", "/write"},
		{"load", "--addr", "127.0.0.1:8086", "--lines", "1", "extra"},
		{"sink", "--addr", "0.0.0.0:0"},
		{"sink", "--lifetime", "48h"},
		{"e2e", "--duration", "11m"},
		{"matrix", "--repeat", "0"},
		{"churn", "--duration", "1s"},
		{"flood", "--only", "udp-7"},
		{"load", "--addr", "127.0.0.1:8086", "--lines", "1", "--format", "syslog", "--transport", "udp"},
		{"load", "--addr", "127.0.0.1:8086", "--lines", "1", "--format", "gelf"},
	} {
		var stderr bytes.Buffer
		require.Equal(t, exitBadArgs, realMain(context.Background(), args, io.Discard, &stderr), "%q", args)
		require.NotEmpty(t, stderr.String(), "%q says why", args)
	}
}

func TestVerifyTakesTheDatabaseFromThePath(t *testing.T) {
	o, err := parseSendFlags([]string{"--addr", "127.0.0.1:1", "--lines", "1", "--verify", "http://localhost:8086",
		"--path", "/write?db=bench&precision=ns"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "bench", o.db)
}

func TestFormatting(t *testing.T) {
	require.Equal(t, "1,234,567", count(1234567))
	require.Equal(t, "-1,000", count(-1000))
	require.Equal(t, "999", count(999))
	require.Equal(t, "1.5 KiB", size(1536))
	require.Equal(t, "12.0 B", size(12))
}
