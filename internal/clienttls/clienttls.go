// Package clienttls holds the TLS options of an output that connects to a server, with
// Telegraf's key names, and builds the tls.Config they describe. Certificates are verified
// by default and the oldest version offered is TLS 1.2.
package clienttls

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/morse-agent/morse"
)

// Options are Telegraf's client TLS options. Embed them in an output's config struct.
type Options struct {
	CA                 string `toml:"tls_ca"`               // PEM file of CAs to trust instead of the system's
	Cert               string `toml:"tls_cert"`             // PEM client certificate, for mutual TLS
	Key                string `toml:"tls_key"`              // PEM key of Cert
	ServerName         string `toml:"tls_server_name"`      // overrides the name checked in the server's certificate
	InsecureSkipVerify bool   `toml:"insecure_skip_verify"` // do not verify the server's certificate
}

// Set reports whether any option is set.
func (o Options) Set() bool { return o != Options{} }

// Validate reports options that cannot work, each naming its TOML key.
func (o Options) Validate() []error {
	if (o.Cert == "") != (o.Key == "") {
		return []error{morse.Errorf("tls_cert", "tls_cert and tls_key must be set together")}
	}
	return nil
}

// Config builds the tls.Config, reading the files named. It always returns a config, so a
// caller that must speak TLS gets verified defaults when no option is set.
func (o Options) Config() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // an explicit operator choice
	}
	if o.CA != "" {
		pool, err := LoadCAs(o.CA)
		if err != nil {
			return nil, morse.Errorf("tls_ca", "%w", err)
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

// LoadCAs reads a PEM file of CA certificates into a pool.
func LoadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
