package loadgen

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
)

// LoopbackAddr checks that addr (host:port) names this machine and returns it with the host
// as a literal IP, so that nothing resolves it again later. Only loopback IPs and the name
// "localhost" pass; "localhost" becomes 127.0.0.1 without consulting a resolver, whose
// answer might not be loopback. The tool must never send traffic off the machine.
// allowZeroPort permits port 0, for servers that bind a free port.
func LoopbackAddr(addr string, allowZeroPort bool) (string, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", fmt.Errorf("address %q: port %q is not a number from 0 to 65535", addr, portStr)
	}
	if port == 0 && !allowZeroPort {
		return "", fmt.Errorf("address %q: port 0 cannot be sent to", addr)
	}
	if host == "localhost" {
		return net.JoinHostPort("127.0.0.1", portStr), nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() || ip.Zone() != "" {
		return "", fmt.Errorf("address %q: only loopback addresses (127.0.0.0/8, ::1) or localhost are allowed", addr)
	}
	return net.JoinHostPort(ip.Unmap().String(), portStr), nil
}

// LoopbackURL checks that an http URL points at this machine, as LoopbackAddr does for a
// host and port, and returns it with the host as a literal IP and without a trailing path
// slash.
func LoopbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("url %q: only http:// is supported", raw)
	}
	hostport := u.Host
	if u.Port() == "" {
		hostport = net.JoinHostPort(u.Hostname(), "80")
	}
	addr, err := LoopbackAddr(hostport, false)
	if err != nil {
		return nil, err
	}
	out := *u
	out.Host = addr
	for len(out.Path) > 0 && out.Path[len(out.Path)-1] == '/' {
		out.Path = out.Path[:len(out.Path)-1]
	}
	return &out, nil
}
