package syslog

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// wait waits for n metrics and returns them.
func (st *started) wait(t *testing.T, n int) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, st.acc.Wait(ctx, n))
	var out []map[string]any
	for _, m := range st.acc.Metrics() {
		require.Equal(t, "syslog", m.Name())
		f := testutil.FieldsOf(m)
		for k, v := range testutil.TagsOf(m) {
			f["tag:"+k] = v
		}
		out = append(out, f)
	}
	return out
}

// port is the plugin's port, for logger's -P.
func (st *started) port() string {
	_, p, _ := net.SplitHostPort(st.p.Addr().String())
	return p
}

// loggerArgs are the options every logger run below shares: an RFC 5424 message from
// "app" at local3.warning with a message ID and structured data.
var loggerArgs = []string{"-t", "app", "-p", "local3.warning", "--msgid", "ID1",
	"--sd-id", "ex@32473", "--sd-param", `k="v"`}

// requireLoggerMessage checks what logger's RFC 5424 message became: Telegraf's tags and
// fields, with their types.
func requireLoggerMessage(t *testing.T, got map[string]any, text, source string) {
	t.Helper()
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, "app", got["tag:appname"])
	require.Equal(t, "local3", got["tag:facility"])
	require.Equal(t, "warning", got["tag:severity"])
	require.Equal(t, host, got["tag:hostname"])
	if source == "" {
		require.NotContains(t, got, "tag:source")
	} else {
		require.Equal(t, source, got["tag:source"])
	}
	require.Equal(t, int64(19), got["facility_code"])
	require.Equal(t, int64(4), got["severity_code"])
	require.Equal(t, uint64(1), got["version"])
	require.Equal(t, "ID1", got["msgid"])
	require.Equal(t, text, got["message"])
	require.Equal(t, "v", got["ex@32473_k"])
	require.Equal(t, "1", got["timeQuality_tzKnown"], "logger's own structured data")
	ts, ok := got["timestamp"].(int64)
	require.True(t, ok, "timestamp is an integer of nanoseconds")
	require.WithinDuration(t, time.Now(), time.Unix(0, ts), time.Minute)
}

// TestLoggerOverUDPTCPAndUnix sends with util-linux's logger over every transport it has:
// UDP, TCP with octet-counting, TCP with a line feed after each message (non-transparent)
// and a unix datagram socket, several messages on one connection where it can.
func TestLoggerOverUDPTCPAndUnix(t *testing.T) {
	t.Run("udp", func(t *testing.T) {
		st := start(t, `server = "udp://127.0.0.1:0"`)
		testserver.Logger(t, append([]string{"-n", "127.0.0.1", "-P", st.port(), "-d", "--rfc5424"}, append(loggerArgs, "over udp")...)...)
		requireLoggerMessage(t, st.wait(t, 1)[0], "over udp", "127.0.0.1")
	})
	for _, framing := range []string{"octet-counting", "non-transparent"} {
		t.Run("tcp "+framing, func(t *testing.T) {
			st := start(t, `server = "tcp://127.0.0.1:0"
framing = "`+framing+`"`)
			file := t.TempDir() + "/lines"
			require.NoError(t, os.WriteFile(file, []byte("first\nsecond\nthird\n"), 0o600))
			args := []string{"-n", "127.0.0.1", "-P", st.port(), "-T", "--rfc5424", "-f", file}
			if framing == "octet-counting" {
				args = append(args, "--octet-count")
			}
			testserver.Logger(t, append(args, loggerArgs...)...)
			got := st.wait(t, 3)
			for i, text := range []string{"first", "second", "third"} {
				requireLoggerMessage(t, got[i], text, "127.0.0.1")
			}
			require.Zero(t, st.count("connections_opened")-1, "one connection for the three messages")
			require.Empty(t, st.acc.Errors())
		})
	}
	t.Run("unixgram", func(t *testing.T) {
		st := start(t, `server = "unixgram:///x"`)
		testserver.Logger(t, append([]string{"-u", st.p.addr.Addr, "--socket-errors=on", "--rfc5424"}, append(loggerArgs, "over unix")...)...)
		requireLoggerMessage(t, st.wait(t, 1)[0], "over unix", "")
	})
}

// TestLoggerRFC3164 sends an RFC 3164 message, whose timestamp has no year: the plugin's
// clock gives it, as Telegraf gives it the current year.
func TestLoggerRFC3164(t *testing.T) {
	st := start(t, `server = "udp://127.0.0.1:0"
syslog_standard = "RFC3164"`)
	testserver.Logger(t, "-n", "127.0.0.1", "-P", st.port(), "-d", "--rfc3164", "-t", "app", "-p", "user.err", "old style")
	got := st.wait(t, 1)[0]
	require.Equal(t, "app", got["tag:appname"])
	require.Equal(t, "user", got["tag:facility"])
	require.Equal(t, "err", got["tag:severity"])
	require.Equal(t, "old style", got["message"])
	require.Equal(t, int64(1), got["facility_code"])
	require.Equal(t, int64(3), got["severity_code"])
	require.NotContains(t, got, "version", "RFC 3164 has no version")
	ts, ok := got["timestamp"].(int64)
	require.True(t, ok)
	require.Equal(t, testNow().Year(), time.Unix(0, ts).UTC().Year())
}

// TestTLSWithOpenSSL sends octet-counted messages through openssl s_client, a real TLS
// client that verifies the plugin's certificate.
func TestTLSWithOpenSSL(t *testing.T) {
	st := start(t, `server = "tcp://127.0.0.1:0"
tls_cert = "x"`)
	msg := "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut=\"3\"] over tls"
	frame := strconv.Itoa(len(msg)) + " " + msg
	testserver.TLSSend(t, st.p.Addr().String(), st.certs.CA, []byte(frame+frame))
	got := st.wait(t, 2)
	for _, m := range got {
		require.Equal(t, "over tls", m["message"])
		require.Equal(t, "3", m["exampleSDID@32473_iut"])
		require.Equal(t, int64(1065910455003000000), m["timestamp"])
		require.Equal(t, "mymachine.example.com", m["tag:hostname"])
	}
}
