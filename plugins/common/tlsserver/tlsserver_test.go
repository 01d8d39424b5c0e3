package tlsserver_test

import (
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/common/tlsserver"
)

func TestConfig(t *testing.T) {
	require.NoError(t, (&tlsserver.Config{}).ValidateTLS())
	cfg, err := (&tlsserver.Config{}).TLSConfig()
	require.NoError(t, err)
	require.Nil(t, cfg, "TLS is off without a certificate")

	certs := testutil.NewCerts(t)
	o := tlsserver.Config{Cert: certs.ServerCert, Key: certs.ServerKey}
	cfg, err = o.TLSConfig()
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)

	o.AllowedCACerts, o.MinVersion = []string{certs.CA}, "TLS13"
	cfg, err = o.TLSConfig()
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS13), cfg.MinVersion)
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)

	for _, bad := range []tlsserver.Config{
		{Cert: certs.ServerCert},
		{Cert: certs.ServerCert, Key: certs.ServerKey, MinVersion: "TLS11"},
		{Cert: certs.ServerCert, Key: certs.ServerKey, MinVersion: "SSL3"},
		{AllowedCACerts: []string{certs.CA}},
	} {
		require.Error(t, bad.ValidateTLS(), "%+v", bad)
	}
	_, err = (&tlsserver.Config{Cert: certs.ServerCert, Key: certs.CA}).TLSConfig()
	require.ErrorContains(t, err, "tls_cert: ")
	_, err = (&tlsserver.Config{Cert: certs.ServerCert, Key: certs.ServerKey, AllowedCACerts: []string{certs.ServerKey}}).TLSConfig()
	require.ErrorContains(t, err, "tls_allowed_cacerts: ")
}
