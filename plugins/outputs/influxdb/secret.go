package influxdb

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"github.com/morse-agent/morse"
)

// TLSOptions are Telegraf's client TLS options. Certificates are verified by default and the
// minimum version is TLS 1.2.
type TLSOptions struct {
	CA                 string `toml:"tls_ca"`               // PEM file of CAs to trust instead of the system's
	Cert               string `toml:"tls_cert"`             // PEM client certificate, for mutual TLS
	Key                string `toml:"tls_key"`              // PEM key of Cert
	ServerName         string `toml:"tls_server_name"`      // overrides the name checked in the server's certificate
	InsecureSkipVerify bool   `toml:"insecure_skip_verify"` // do not verify the server's certificate
}

// validate reports options that cannot work, naming the TOML key.
func (o TLSOptions) validate() []error {
	var errs []error
	if (o.Cert == "") != (o.Key == "") {
		errs = append(errs, morse.Errorf("tls_cert", "tls_cert and tls_key must be set together"))
	}
	return errs
}

// Config builds the tls.Config; nil when no option is set, which lets net/http use its
// verified defaults.
func (o TLSOptions) Config() (*tls.Config, error) {
	if o == (TLSOptions{}) {
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // an explicit operator choice
	}
	if o.CA != "" {
		pem, err := os.ReadFile(o.CA)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca: %s holds no PEM certificate", o.CA)
		}
		cfg.RootCAs = pool
	}
	if o.Cert != "" {
		cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("tls_cert/tls_key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// timeoutOf converts a config duration.
func timeoutOf(d morse.Duration) time.Duration { return time.Duration(d) }
