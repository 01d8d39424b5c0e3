package loadgen

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackAddrRefusesRemoteAddresses(t *testing.T) {
	for _, addr := range []string{
		"10.0.0.1:80", "example.com:80", "192.168.1.1:8086", "0.0.0.0:8086", "[::]:8086",
		"[2001:db8::1]:80", "localhost.example.com:80", "127.0.0.1", "127.0.0.1:http",
		"127.0.0.1:70000", "[fe80::1%lo]:80",
	} {
		_, err := LoopbackAddr(addr, false)
		require.Error(t, err, addr)
	}
}

func TestLoopbackAddrAcceptsThisMachine(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8086":          "127.0.0.1:8086",
		"127.1.2.3:1":             "127.1.2.3:1",
		"localhost:9000":          "127.0.0.1:9000",
		"[::1]:8086":              "[::1]:8086",
		"[::ffff:127.0.0.1]:8086": "127.0.0.1:8086",
	} {
		got, err := LoopbackAddr(addr, false)
		require.NoError(t, err, addr)
		require.Equal(t, want, got)
	}
	_, err := LoopbackAddr("127.0.0.1:0", false)
	require.Error(t, err, "port 0 cannot be sent to")
	got, err := LoopbackAddr("127.0.0.1:0", true)
	require.NoError(t, err, "port 0 is fine to bind")
	require.Equal(t, "127.0.0.1:0", got)
}

func TestLoopbackURL(t *testing.T) {
	u, err := LoopbackURL("http://localhost:8086/")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8086", u.String())
	u, err = LoopbackURL("http://127.0.0.1")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:80", u.Host)
	for _, raw := range []string{"http://10.0.0.1:80", "http://example.com:80", "https://127.0.0.1:8086", "127.0.0.1:8086"} {
		_, err := LoopbackURL(raw)
		require.Error(t, err, raw)
	}
}
