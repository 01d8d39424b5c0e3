package socketlistener

import (
	"fmt"
	"strings"
)

// address is a parsed service_address.
type address struct {
	network string // tcp, tcp4, tcp6, udp, udp4, udp6, unix or unixgram
	addr    string // host:port, or a socket path
}

// stream reports whether the network carries a byte stream (one parse per connection)
// rather than datagrams (one parse per datagram).
func (a address) stream() bool {
	switch a.network {
	case "tcp", "tcp4", "tcp6", "unix":
		return true
	}
	return false
}

func (a address) unix() bool { return a.network == "unix" || a.network == "unixgram" }

// parseAddress reads Telegraf's service_address form: "tcp://127.0.0.1:8094",
// "udp://[::1]:8094", "unix:///run/morse.sock" or "unixgram:///run/morse.sock".
func parseAddress(s string) (address, error) {
	network, rest, ok := strings.Cut(s, "://")
	if !ok {
		return address{}, fmt.Errorf("%q has no scheme: write it like \"tcp://127.0.0.1:8094\", \"udp://127.0.0.1:8094\" or \"unix:///run/morse.sock\"", s)
	}
	network = strings.ToLower(network)
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		if !strings.Contains(rest, ":") {
			return address{}, fmt.Errorf("%q needs a port, like \"%s://127.0.0.1:8094\"", s, network)
		}
	case "unix", "unixgram":
		if rest == "" {
			return address{}, fmt.Errorf("%q needs a socket path, like \"%s:///run/morse.sock\"", s, network)
		}
	default:
		return address{}, fmt.Errorf("unknown scheme %q: use tcp, tcp4, tcp6, udp, udp4, udp6, unix or unixgram", network)
	}
	return address{network: network, addr: rest}, nil
}
