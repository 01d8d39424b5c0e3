// Package tlsclient holds Telegraf's client-side TLS options, for plugins that connect to
// a server (the outputs, and kafka_consumer through plugins/common/kafka): a plugin embeds
// Config, so that tls_ca, tls_cert, tls_key and the others sit in the plugin's own table,
// as they do in Telegraf. Its server-side counterpart, for the listeners, is
// plugins/common/tlsserver.
//
// It lives under plugins/common rather than internal/ because plugin structs embed it and so
// export it.
package tlsclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/tlsver"
)

// Config holds Telegraf's client TLS keys. Certificates are verified by default, and the
// lowest version is TLS 1.2.
type Config struct {
	// CA is a PEM file of the CAs to trust instead of the system's.
	CA string `toml:"tls_ca"`
	// Cert and Key are the PEM client certificate and its key, for mutual TLS.
	Cert string `toml:"tls_cert"`
	Key  string `toml:"tls_key"`
	// KeyPassword is Telegraf's password of an encrypted key. morse reads only unencrypted
	// keys, so a set password is refused rather than ignored.
	KeyPassword morse.Secret `toml:"tls_key_pwd"`
	// ServerName overrides the name checked in the server's certificate and sent by SNI.
	ServerName string `toml:"tls_server_name"`
	// MinVersion is "TLS12" (the default) or "TLS13".
	MinVersion string `toml:"tls_min_version"`
	// CipherSuites names the TLS 1.2 suites to offer (crypto/tls names), or "secure" (or
	// Telegraf's "all") for Go's secure ones; empty keeps Go's defaults. Insecure suites are
	// refused. TLS 1.3 suites are not configurable.
	CipherSuites []string `toml:"tls_cipher_suites"`
	// RenegotiationMethod is "never" (the default), "once" or "freely".
	RenegotiationMethod string `toml:"tls_renegotiation_method"`
	// InsecureSkipVerify turns off the check of the server's certificate.
	InsecureSkipVerify bool `toml:"insecure_skip_verify"`
	// Enable forces TLS on (with system defaults) or off; unset, TLS is on when any other
	// key is set or the address asks for it (https://).
	Enable *bool `toml:"tls_enable"`
}

// Validate checks the keys without reading any file, naming the key at fault.
func (c *Config) Validate() error {
	var errs []error
	if (c.Cert == "") != (c.Key == "") {
		errs = append(errs, morse.Errorf("tls_cert", "tls_cert and tls_key must be set together"))
	}
	if c.KeyPassword.IsSet() {
		errs = append(errs, morse.Errorf("tls_key_pwd", "encrypted keys are not supported: decrypt the key (openssl pkey -in key.pem -out plain.pem) and leave tls_key_pwd unset"))
	}
	if _, err := tlsver.Min(c.MinVersion); err != nil {
		errs = append(errs, morse.Errorf("tls_min_version", "%v", err))
	}
	if _, err := cipherSuites(c.CipherSuites); err != nil {
		errs = append(errs, morse.Errorf("tls_cipher_suites", "%v", err))
	}
	if _, err := renegotiation(c.RenegotiationMethod); err != nil {
		errs = append(errs, morse.Errorf("tls_renegotiation_method", "%v", err))
	}
	return errors.Join(errs...)
}

// Configured reports whether any key asks for TLS.
func (c *Config) Configured() bool {
	if c.Enable != nil {
		return *c.Enable
	}
	return c.CA != "" || c.Cert != "" || c.ServerName != "" || c.InsecureSkipVerify ||
		c.MinVersion != "" || len(c.CipherSuites) > 0 ||
		(c.RenegotiationMethod != "" && c.RenegotiationMethod != "never")
}

// Disabled reports whether tls_enable = false turns TLS off whatever else is set.
func (c *Config) Disabled() bool { return c.Enable != nil && !*c.Enable }

// TLSConfig loads the files and returns the tls.Config, or nil when no key asks for TLS,
// which leaves an https:// client on Go's verified defaults. Errors name the key and file.
func (c *Config) TLSConfig() (*tls.Config, error) {
	if !c.Configured() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	version, _ := tlsver.Min(c.MinVersion)
	suites, _ := cipherSuites(c.CipherSuites)
	reneg, _ := renegotiation(c.RenegotiationMethod)
	cfg := &tls.Config{
		MinVersion:         version,
		CipherSuites:       suites,
		Renegotiation:      reneg,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // an explicit operator choice
	}
	if c.CA != "" {
		pool, err := LoadCAs(c.CA)
		if err != nil {
			return nil, morse.Errorf("tls_ca", "%v", err)
		}
		cfg.RootCAs = pool
	}
	if c.Cert != "" {
		cert, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, morse.Errorf("tls_cert", "loading %s and %s: %v", c.Cert, c.Key, err)
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

// cipherSuites reads tls_cipher_suites. Insecure suites are refused: Telegraf offers them on
// request, but an output that sends metrics has no reason to.
func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	known := map[string]uint16{}
	var secure []uint16
	for _, s := range tls.CipherSuites() {
		known[strings.ToUpper(s.Name)] = s.ID
		secure = append(secure, s.ID)
	}
	var ids []uint16
	for _, n := range names {
		switch up := strings.ToUpper(n); {
		case up == "SECURE" || up == "ALL":
			ids = append(ids, secure...)
		case known[up] != 0:
			ids = append(ids, known[up])
		default:
			return nil, fmt.Errorf("%q is not a secure cipher suite of crypto/tls", n)
		}
	}
	return ids, nil
}

// renegotiation reads tls_renegotiation_method.
func renegotiation(s string) (tls.RenegotiationSupport, error) {
	switch s {
	case "", "never":
		return tls.RenegotiateNever, nil
	case "once":
		return tls.RenegotiateOnceAsClient, nil
	case "freely":
		return tls.RenegotiateFreelyAsClient, nil
	}
	return 0, fmt.Errorf("%q: use \"never\", \"once\" or \"freely\"", s)
}
