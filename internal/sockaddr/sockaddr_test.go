package sockaddr

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Address
		stream  bool
		unix    bool
		errPart string
	}{
		{in: "tcp://127.0.0.1:8094", want: Address{"tcp", "127.0.0.1:8094"}, stream: true},
		{in: "TCP6://[::1]:8094", want: Address{"tcp6", "[::1]:8094"}, stream: true},
		{in: "udp4://127.0.0.1:8094", want: Address{"udp4", "127.0.0.1:8094"}},
		{in: "unix:///run/morse.sock", want: Address{"unix", "/run/morse.sock"}, stream: true, unix: true},
		{in: "unixgram:///run/morse.sock", want: Address{"unixgram", "/run/morse.sock"}, unix: true},
		{in: "127.0.0.1:8094", errPart: "no scheme"},
		{in: "tcp://localhost", errPart: "needs a port"},
		{in: "unix://", errPart: "needs a socket path"},
		{in: "vsock://3:1024", errPart: "unknown scheme"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			a, err := Parse(tc.in)
			if tc.errPart != "" {
				require.ErrorContains(t, err, tc.errPart)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, a)
			require.Equal(t, tc.stream, a.Stream())
			require.Equal(t, tc.unix, a.Unix())
		})
	}
}
