package testserver

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Real syslog senders, for inputs.syslog: util-linux's logger (Debian's bsdutils), which
// sends RFC 5424 or RFC 3164 over UDP, TCP (octet-counting or a line feed after each
// message) and unix sockets, and OpenSSL's s_client, a TLS client that writes what it reads
// from its standard input. scripts/ensure-syslog-senders.sh installs both.

// Logger runs logger with args, such as "-n", "127.0.0.1", "-P", port, "--tcp",
// "--octet-count", "message", and fails the test unless it exits cleanly within 30s.
func Logger(t testing.TB, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("logger")
	require.NoError(t, err, "testserver: no logger: run scripts/ensure-syslog-senders.sh (make test-deps)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	require.NoError(t, err, "testserver: logger %v: %s", args, out)
}

// TLSSend connects to addr (host:port) with openssl s_client, checks the server's
// certificate against the CA file ca, writes data and closes the connection, and fails the
// test unless the handshake was verified and s_client exited cleanly within 30s.
func TLSSend(t testing.TB, addr, ca string, data []byte) {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	require.NoError(t, err, "testserver: no openssl: run scripts/ensure-syslog-senders.sh (make test-deps)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// -verify_return_error makes a certificate the CA did not sign fail the handshake;
	// -quiet leaves s_client's chatter out and ends the session at the end of the input.
	cmd := exec.CommandContext(ctx, bin, "s_client", "-connect", addr, "-CAfile", ca,
		"-verify_return_error", "-quiet", "-no_ign_eof")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "testserver: openssl s_client to %s: %s", addr, out)
}
