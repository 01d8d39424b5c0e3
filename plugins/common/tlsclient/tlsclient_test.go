package tlsclient

import (
	"crypto/tls"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

func TestTLSConfig(t *testing.T) {
	certs := testutil.NewCerts(t)
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		cfg   Config
		isNil bool
		check func(t *testing.T, c *tls.Config)
		err   string
	}{
		{name: "nothing set: Go's verified defaults", isNil: true},
		{name: "tls_enable = false", cfg: Config{Enable: &no, CA: certs.CA}, isNil: true},
		{name: "tls_enable = true alone", cfg: Config{Enable: &yes}, check: func(t *testing.T, c *tls.Config) {
			require.EqualValues(t, tls.VersionTLS12, c.MinVersion)
			require.False(t, c.InsecureSkipVerify)
		}},
		{name: "ca", cfg: Config{CA: certs.CA}, check: func(t *testing.T, c *tls.Config) { require.NotNil(t, c.RootCAs) }},
		{name: "client certificate", cfg: Config{Cert: certs.ClientCert, Key: certs.ClientKey}, check: func(t *testing.T, c *tls.Config) {
			require.Len(t, c.Certificates, 1)
		}},
		{name: "server name, TLS 1.3, renegotiation", cfg: Config{ServerName: "db", MinVersion: "TLS13", RenegotiationMethod: "once"},
			check: func(t *testing.T, c *tls.Config) {
				require.Equal(t, "db", c.ServerName)
				require.EqualValues(t, tls.VersionTLS13, c.MinVersion)
				require.Equal(t, tls.RenegotiateOnceAsClient, c.Renegotiation)
			}},
		{name: "suites", cfg: Config{CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}}, check: func(t *testing.T, c *tls.Config) {
			require.Equal(t, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, c.CipherSuites)
		}},
		{name: "secure suites", cfg: Config{CipherSuites: []string{"secure"}}, check: func(t *testing.T, c *tls.Config) {
			require.Len(t, c.CipherSuites, len(tls.CipherSuites()))
		}},
		{name: "insecure_skip_verify", cfg: Config{InsecureSkipVerify: true}, check: func(t *testing.T, c *tls.Config) {
			require.True(t, c.InsecureSkipVerify)
		}},
		{name: "missing ca", cfg: Config{CA: filepath.Join(t.TempDir(), "none.pem")}, err: "tls_ca:"},
		{name: "ca without a certificate", cfg: Config{CA: certs.ClientKey}, err: "holds no PEM certificate"},
		{name: "cert without key", cfg: Config{Cert: certs.ClientCert}, err: "tls_cert:"},
		{name: "key password", cfg: Config{Cert: certs.ClientCert, Key: certs.ClientKey, KeyPassword: "pw"}, err: "tls_key_pwd:"},
		{name: "old version", cfg: Config{MinVersion: "TLS10"}, err: "too old"},
		{name: "insecure suite", cfg: Config{CipherSuites: []string{"TLS_RSA_WITH_RC4_128_SHA"}}, err: "tls_cipher_suites:"},
		{name: "renegotiation", cfg: Config{RenegotiationMethod: "sometimes"}, err: "tls_renegotiation_method:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.cfg.TLSConfig()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, tc.cfg.Validate())
			if tc.isNil {
				require.Nil(t, c)
				return
			}
			require.NotNil(t, c)
			require.GreaterOrEqual(t, c.MinVersion, uint16(tls.VersionTLS12))
			tc.check(t, c)
		})
	}
}
