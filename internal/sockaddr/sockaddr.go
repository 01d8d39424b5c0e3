// Package sockaddr reads Telegraf's socket addresses, "tcp://127.0.0.1:8094",
// "udp://[::1]:8094", "unix:///run/morse.sock" or "unixgram:///run/morse.sock", for the
// socket listener and the socket writer.
package sockaddr

import (
	"fmt"
	"strings"
)

// Address is a parsed socket address.
type Address struct {
	Network string // tcp, tcp4, tcp6, udp, udp4, udp6, unix or unixgram
	Addr    string // host:port, or a socket path
}

// Stream reports whether the network carries a byte stream (a connection) rather than
// datagrams.
func (a Address) Stream() bool {
	switch a.Network {
	case "tcp", "tcp4", "tcp6", "unix":
		return true
	}
	return false
}

// Unix reports whether the address is a unix socket's path.
func (a Address) Unix() bool { return a.Network == "unix" || a.Network == "unixgram" }

// Parse reads Telegraf's form: "tcp://127.0.0.1:8094", "udp://[::1]:8094",
// "unix:///run/morse.sock" or "unixgram:///run/morse.sock".
func Parse(s string) (Address, error) {
	network, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Address{}, fmt.Errorf("%q has no scheme: write it like \"tcp://127.0.0.1:8094\", \"udp://127.0.0.1:8094\" or \"unix:///run/morse.sock\"", s)
	}
	network = strings.ToLower(network)
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
		if !strings.Contains(rest, ":") {
			return Address{}, fmt.Errorf("%q needs a port, like \"%s://127.0.0.1:8094\"", s, network)
		}
	case "unix", "unixgram":
		if rest == "" {
			return Address{}, fmt.Errorf("%q needs a socket path, like \"%s:///run/morse.sock\"", s, network)
		}
	default:
		return Address{}, fmt.Errorf("unknown scheme %q: use tcp, tcp4, tcp6, udp, udp4, udp6, unix or unixgram", network)
	}
	return Address{Network: network, Addr: rest}, nil
}
