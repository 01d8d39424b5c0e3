package net_response

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedNginx()
	os.Exit(code)
}

var golden = filepath.Join("testdata", "net_response.golden")

// probe gathers once with n and returns the one metric, checked against the golden list.
func probe(t *testing.T, n *NetResponse) morse.Metric {
	t.Helper()
	require.NoError(t, n.Init())
	acc := &testutil.Accumulator{}
	require.NoError(t, n.Gather(testutil.Context(t), acc))
	require.Empty(t, acc.Errors())
	require.Equal(t, 1, acc.NMetrics())
	require.Empty(t, testutil.LoadGolden(t, golden).Check(acc.Metrics()))
	return acc.Metrics()[0]
}

func requireResult(t *testing.T, m morse.Metric, result string, code uint64, timed bool) {
	t.Helper()
	tag, _ := m.Tag("result")
	require.Equal(t, result, tag)
	f := testutil.FieldsOf(m)
	require.Equal(t, code, f["result_code"])
	require.Equal(t, result, f["result_type"])
	_, ok := f["response_time"]
	require.Equal(t, timed, ok, "response_time")
}

func TestTCPAgainstNginx(t *testing.T) {
	ngx := testserver.SharedNginx(t)
	tcp := func(addr, send, expect string) *NetResponse {
		n := New()
		n.Address, n.Send, n.Expect = addr, send, expect
		n.ReadTimeout = morse.Duration(300_000_000) // 300ms: the blackhole never answers
		return n
	}
	get := "GET /index.html HTTP/1.0\r\n\r\n"

	m := probe(t, tcp(ngx.Addr, get, "HTTP/1.1 200"))
	requireResult(t, m, "success", 0, true)
	host, port, _ := net.SplitHostPort(ngx.Addr)
	require.Equal(t, map[string]string{"server": host, "port": port, "protocol": "tcp", "result": "success"}, testutil.TagsOf(m))
	require.Equal(t, true, testutil.FieldsOf(m)["string_found"])

	m = probe(t, tcp(ngx.Addr, get, "SSH-2.0"))
	requireResult(t, m, "string_mismatch", 4, true)
	require.Equal(t, false, testutil.FieldsOf(m)["string_found"])

	m = probe(t, tcp(ngx.Addr, "", ""))
	requireResult(t, m, "success", 0, true)
	require.NotContains(t, testutil.FieldsOf(m), "string_found", "only with expect")

	requireResult(t, probe(t, tcp(ngx.BlackholeAddr(), get, "HTTP")), "read_failed", 3, true)
	requireResult(t, probe(t, tcp(testutil.FreeAddr(t), "", "")), "connection_failed", 2, false)

	short := tcp(ngx.Addr, "", "")
	short.Timeout = 1 // 1ns: the connect cannot finish in time
	requireResult(t, probe(t, short), "timeout", 1, false)
}

// udpEcho answers every datagram with "echo: " and the datagram, beside the real server
// above: nginx here speaks TCP only.
func udpEcho(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1024)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte("echo: "), buf[:n]...), addr)
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

func TestUDP(t *testing.T) {
	udp := func(addr, expect string) *NetResponse {
		n := New()
		n.Protocol, n.Address, n.Send, n.Expect = "udp", addr, "hello", expect
		n.ReadTimeout = morse.Duration(300_000_000)
		return n
	}
	echo := udpEcho(t)
	requireResult(t, probe(t, udp(echo, "echo: hel+o")), "success", 0, true)
	requireResult(t, probe(t, udp(echo, "goodbye")), "string_mismatch", 4, true)
	// Nothing listens: the kernel's port unreachable fails the read.
	ports, err := testutil.FreePorts("udp", 1)
	require.NoError(t, err)
	closed := net.JoinHostPort("127.0.0.1", fmt.Sprint(ports[0]))
	requireResult(t, probe(t, udp(closed, "x")), "read_failed", 3, false)
}

func TestValidateReportsEveryProblem(t *testing.T) {
	n := &NetResponse{Protocol: "udp", Address: "nowhere", Expect: "("}
	err := n.Validate()
	for _, key := range []string{"send:", "address:", "expect: error parsing"} {
		require.ErrorContains(t, err, key)
	}
	n = &NetResponse{Protocol: "sctp", Address: ":22"}
	require.ErrorContains(t, n.Validate(), "protocol:")
	require.NoError(t, (&NetResponse{Protocol: "tcp", Address: ":22"}).Init())
}

func TestEmptyHostIsLocalhost(t *testing.T) {
	n := &NetResponse{Protocol: "tcp", Address: ":1"}
	require.NoError(t, n.Init())
	require.Equal(t, "localhost:1", n.Address)
}
