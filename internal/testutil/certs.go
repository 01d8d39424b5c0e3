package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Certs are PEM files in one directory: a CA, a server certificate for 127.0.0.1, ::1 and
// localhost, and a client certificate, both signed by the CA, all ECDSA P-256 and valid for
// a day. Keys are unencrypted PKCS #8, which Go and Java's PEM keystores both read.
type Certs struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// ServerChain holds the server's key, its certificate and the CA's in one file, as a
	// Kafka broker reads them (ssl.keystore.type=PEM).
	ServerChain string

	pool   *x509.CertPool
	client tls.Certificate
}

// NewCerts makes a fresh CA and certificates under t.TempDir().
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	c, err := WriteCerts(t.TempDir(), "morse test client")
	require.NoError(t, err)
	return c
}

// WriteCerts makes a fresh CA and certificates in dir, which must exist. The client
// certificate's common name is clientCN, which a server may map to a principal.
func WriteCerts(dir, clientCN string) (*Certs, error) {
	caKey, caCert, caDER, err := newCert("morse test CA", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
	if err != nil {
		return nil, err
	}
	srvKey, _, srvDER, err := newCert("127.0.0.1", caCert, caKey, func(c *x509.Certificate) {
		c.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		c.DNSNames = []string{"localhost"}
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	if err != nil {
		return nil, err
	}
	cliKey, _, cliDER, err := newCert(clientCN, caCert, caKey, func(c *x509.Certificate) {
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, err
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	c := &Certs{
		CA: at("ca.pem"), ServerCert: at("server.pem"), ServerKey: at("server-key.pem"),
		ServerChain: at("server-chain.pem"), ClientCert: at("client.pem"), ClientKey: at("client-key.pem"),
		pool: x509.NewCertPool(),
	}
	c.pool.AddCert(caCert)
	chain := append(append(keyPEM(srvKey), certPEM(srvDER)...), certPEM(caDER)...)
	err = errors.Join(
		os.WriteFile(c.CA, certPEM(caDER), 0o600),
		os.WriteFile(c.ServerCert, certPEM(srvDER), 0o600),
		os.WriteFile(c.ServerKey, keyPEM(srvKey), 0o600),
		os.WriteFile(c.ServerChain, chain, 0o600),
		os.WriteFile(c.ClientCert, certPEM(cliDER), 0o600),
		os.WriteFile(c.ClientKey, keyPEM(cliKey), 0o600),
	)
	if err != nil {
		return nil, fmt.Errorf("write the test certificates: %w", err)
	}
	if c.client, err = tls.LoadX509KeyPair(c.ClientCert, c.ClientKey); err != nil {
		return nil, fmt.Errorf("load the test client certificate: %w", err)
	}
	return c, nil
}

// ClientTLS returns a client config that trusts the test CA and, when withCert is set,
// presents the client certificate.
func (c *Certs) ClientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: c.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{c.client}
	}
	return cfg
}

// newCert makes a key and a certificate for cn, signed by parent (self-signed when nil).
func newCert(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, edit func(*x509.Certificate)) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generate a key for %s: %w", cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("draw a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	edit(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sign the certificate of %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, der, err
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err) // an ECDSA P-256 key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
