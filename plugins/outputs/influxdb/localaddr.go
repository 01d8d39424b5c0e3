package influxdb

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// localTCPAddr reads local_address as Telegraf does: an IP address or host name, with or
// without a port. The empty string gives nil: the system chooses.
func localTCPAddr(s string) (*net.TCPAddr, error) {
	if s == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if !strings.Contains(err.Error(), "missing port") {
			return nil, fmt.Errorf("invalid local address: %w", err)
		}
		host, port = s, ""
	}
	ip, err := net.ResolveIPAddr("ip", host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve local address: %w", err)
	}
	p := 0
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("invalid port: %w", err)
		}
		p = int(n)
	}
	return &net.TCPAddr{IP: ip.IP, Port: p, Zone: ip.Zone}, nil
}

// localDialer dials from local; the timeouts are those of Go's default transport.
func localDialer(local *net.TCPAddr) *net.Dialer {
	return &net.Dialer{LocalAddr: local, Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
}
