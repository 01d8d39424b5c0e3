package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/net/proxy"

	"github.com/morse-agent/morse"
)

// TLSConfig holds Telegraf's client TLS options. Certificates are verified by default, and
// the minimum version is TLS 1.2.
type TLSConfig struct {
	TLSCA              string   `toml:"tls_ca"`               // PEM file of CAs to trust instead of the system's
	TLSCert            string   `toml:"tls_cert"`             // PEM client certificate, for mutual TLS
	TLSKey             string   `toml:"tls_key"`              // PEM key of tls_cert
	TLSKeyPwd          string   `toml:"tls_key_pwd"`          // encrypted keys are not supported; must be empty
	TLSMinVersion      string   `toml:"tls_min_version"`      // "TLS12" (default) or "TLS13"
	TLSCipherSuites    []string `toml:"tls_cipher_suites"`    // accepted; Go's defaults are used
	InsecureSkipVerify bool     `toml:"insecure_skip_verify"` // do not verify the broker's certificate
	ServerName         string   `toml:"tls_server_name"`      // the name to verify instead of the broker's host
	TLSRenegotiation   string   `toml:"tls_renegotiation_method"`
	TLSEnable          *bool    `toml:"tls_enable"` // Telegraf's generic switch; enable_tls wins
}

func (c *TLSConfig) set() bool {
	return c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" || c.InsecureSkipVerify || c.ServerName != "" || c.TLSMinVersion != ""
}

func (c *TLSConfig) validate() []error {
	var errs []error
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, morse.Errorf("tls_cert", "tls_cert and tls_key must be set together"))
	}
	if c.TLSKeyPwd != "" {
		errs = append(errs, morse.Errorf("tls_key_pwd", "encrypted keys are not supported; decrypt the key (openssl pkey) and leave tls_key_pwd empty"))
	}
	switch strings.ToUpper(c.TLSMinVersion) {
	case "", "TLS12", "TLS13":
	case "TLS10", "TLS11":
		errs = append(errs, morse.Errorf("tls_min_version", "%s is not allowed: TLS 1.2 is the minimum", c.TLSMinVersion))
	default:
		errs = append(errs, morse.Errorf("tls_min_version", "unknown version %q; use TLS12 or TLS13", c.TLSMinVersion))
	}
	return errs
}

func (c *TLSConfig) warnings() []string {
	var w []string
	if len(c.TLSCipherSuites) > 0 {
		w = append(w, "tls_cipher_suites has no effect: Go's secure defaults are used")
	}
	if c.TLSRenegotiation != "" && !strings.EqualFold(c.TLSRenegotiation, "never") {
		w = append(w, "tls_renegotiation_method has no effect: renegotiation is never allowed")
	}
	return w
}

// config builds the tls.Config; nil when TLS is off. enable is enable_tls.
func (c *TLSConfig) config(enable *bool) (*tls.Config, error) {
	on := c.set()
	switch {
	case enable != nil:
		on = *enable
	case c.TLSEnable != nil:
		on = *c.TLSEnable
	}
	if !on {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // an explicit operator choice
	}
	if strings.EqualFold(c.TLSMinVersion, "TLS13") {
		cfg.MinVersion = tls.VersionTLS13
	}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca: %s holds no PEM certificate", c.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

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
