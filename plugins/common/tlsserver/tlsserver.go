// Package tlsserver holds Telegraf's server-side TLS options, for inputs that listen: a
// plugin embeds Config, so that tls_cert, tls_key, tls_allowed_cacerts and tls_min_version
// sit in the plugin's own table, as they do in Telegraf. Its client-side counterpart is
// plugins/common/tlsclient.
//
// It lives under plugins/common rather than internal/ because plugin structs embed it and
// so export it.
package tlsserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/tlsver"
)

// Config holds Telegraf's server TLS keys. TLS is off until tls_cert and tls_key are set;
// tls_allowed_cacerts then turns on mutual TLS. The lowest version is TLS 1.2.
type Config struct {
	// Cert is the PEM file of the server's certificate chain.
	Cert string `toml:"tls_cert"`
	// Key is the PEM file of the certificate's private key.
	Key string `toml:"tls_key"`
	// AllowedCACerts are PEM files of the CAs whose client certificates are accepted. When
	// set, every client must present a certificate that one of them signed.
	AllowedCACerts []string `toml:"tls_allowed_cacerts"`
	// MinVersion is the lowest TLS version accepted: "TLS12" (the default) or "TLS13".
	MinVersion string `toml:"tls_min_version"`
}

// TLSEnabled reports whether a certificate is configured, which turns TLS on.
func (o *Config) TLSEnabled() bool { return o.Cert != "" || o.Key != "" }

// ValidateTLS checks the options without reading any file, naming the key at fault.
func (o *Config) ValidateTLS() error {
	var errs []error
	if (o.Cert == "") != (o.Key == "") {
		errs = append(errs, morse.Errorf("tls_cert", "tls_cert and tls_key must be set together"))
	}
	if len(o.AllowedCACerts) > 0 && o.Cert == "" {
		errs = append(errs, morse.Errorf("tls_allowed_cacerts", "mutual TLS needs the server's own tls_cert and tls_key"))
	}
	if _, err := tlsver.Min(o.MinVersion); err != nil {
		errs = append(errs, morse.Errorf("tls_min_version", "%v", err))
	}
	return errors.Join(errs...)
}

// TLSConfig loads the certificate and the client CAs and returns the server's tls.Config,
// or nil when TLS is off. Errors name the key and the file.
func (o *Config) TLSConfig() (*tls.Config, error) {
	if !o.TLSEnabled() {
		return nil, nil
	}
	if err := o.ValidateTLS(); err != nil {
		return nil, err
	}
	version, _ := tlsver.Min(o.MinVersion)
	cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
	if err != nil {
		return nil, morse.Errorf("tls_cert", "loading %s and %s: %v", o.Cert, o.Key, err)
	}
	cfg := &tls.Config{MinVersion: version, Certificates: []tls.Certificate{cert}}
	if len(o.AllowedCACerts) == 0 {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	for _, file := range o.AllowedCACerts {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, morse.Errorf("tls_allowed_cacerts", "%v", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, morse.Errorf("tls_allowed_cacerts", "%s holds no PEM certificate", file)
		}
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	return cfg, nil
}
