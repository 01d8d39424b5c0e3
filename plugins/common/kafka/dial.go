package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"golang.org/x/net/proxy"

	"github.com/morse-agent/morse"
)

// Socks5Config holds Telegraf's SOCKS5 proxy options.
type Socks5Config struct {
	Socks5Enabled  bool         `toml:"socks5_enabled"`
	Socks5Address  string       `toml:"socks5_address"`
	Socks5Username string       `toml:"socks5_username"`
	Socks5Password morse.Secret `toml:"socks5_password"`
}

func (c *Socks5Config) validate() []error {
	if c.Socks5Enabled && c.Socks5Address == "" {
		return []error{morse.Errorf("socks5_address", "socks5_enabled needs an address")}
	}
	return nil
}

// dialTimeout bounds connecting to a broker, TLS handshake included.
const dialTimeout = 10 * time.Second

// dialer connects to brokers: through the SOCKS5 proxy when enabled, with the keep-alive
// period, then TLS when tlsCfg is set, verifying the broker's host name unless
// tls_server_name names another.
func (c *ClientConfig) dialer(tlsCfg *tls.Config) (func(ctx context.Context, network, host string) (net.Conn, error), error) {
	base := &net.Dialer{Timeout: dialTimeout}
	if c.KeepAlivePeriod != nil {
		base.KeepAlive = time.Duration(*c.KeepAlivePeriod)
	}
	dial := base.DialContext
	if c.Socks5Enabled {
		var auth *proxy.Auth
		if c.Socks5Username != "" {
			auth = &proxy.Auth{User: c.Socks5Username, Password: string(c.Socks5Password)}
		}
		d, err := proxy.SOCKS5("tcp", c.Socks5Address, auth, base)
		if err != nil {
			return nil, fmt.Errorf("socks5: %w", err)
		}
		dial = d.(proxy.ContextDialer).DialContext
	}
	if tlsCfg == nil {
		return dial, nil
	}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		conn, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		cfg := tlsCfg.Clone()
		if cfg.ServerName == "" {
			if cfg.ServerName, _, err = net.SplitHostPort(host); err != nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return tc, nil
	}, nil
}
