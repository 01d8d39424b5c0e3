package kafka

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

func TestValidTopic(t *testing.T) {
	for topic, ok := range map[string]bool{
		"telegraf": true, "a.b_c-D9": true, "": false, ".": false, "..": false, "a b": false, "a/b": false,
		"é": false, string(make([]byte, 250)): false,
	} {
		require.Equal(t, ok, ValidTopic(topic) == nil, "%q", topic)
	}
}

func TestBackoff(t *testing.T) {
	c := &ClientConfig{}
	require.Nil(t, c.backoff(), "franz-go's own backoff unless asked")

	c.MetadataRetryBackoff = morse.Duration(100 * time.Millisecond)
	constant := c.backoff()
	require.Equal(t, 100*time.Millisecond, constant(1))
	require.Equal(t, 100*time.Millisecond, constant(5))

	c.MetadataRetryType, c.MetadataRetryMaxDuration = "exponential", morse.Duration(time.Second)
	exp := c.backoff()
	var got []time.Duration
	for tries := 1; tries <= 6; tries++ {
		got = append(got, exp(tries))
	}
	require.Equal(t, []time.Duration{100, 200, 400, 800, 1000, 1000}, scale(got, time.Millisecond))

	c.MetadataRetryBackoff = 0 // sarama's 250 ms
	require.Equal(t, 250*time.Millisecond, c.backoff()(1))
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*ClientConfig)
		err  string // from Validate or Options; empty: both succeed
	}{
		{"plain", func(c *ClientConfig) { c.SASLUsername, c.SASLPassword = "u", "p" }, ""},
		{"scram", func(c *ClientConfig) { c.SASLMechanism, c.SASLUsername = "scram-sha-512", "u" }, ""},
		{"oauth", func(c *ClientConfig) { c.SASLMechanism, c.SASLAccessToken = "OAUTHBEARER", "t" }, ""},
		{"socks5", func(c *ClientConfig) {
			c.Socks5Enabled, c.Socks5Address, c.Socks5Username = true, "127.0.0.1:1080", "u"
		}, ""},
		{"keep-alive", func(c *ClientConfig) { d := morse.Duration(time.Second); c.KeepAlivePeriod = &d }, ""},
		{"missing CA file", func(c *ClientConfig) { c.Config.CA = filepath.Join(t.TempDir(), "none.pem") }, "tls_ca"},
		{"legacy key pair", func(c *ClientConfig) { c.Certificate, c.Key = "c.pem", "k.pem" }, "tls_cert"},
		{"sasl version", func(c *ClientConfig) { v := 2; c.SASLVersion = &v }, "sasl_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &ClientConfig{}
			tc.edit(c)
			err := c.Validate()
			if err == nil {
				_, err = c.Options([]string{"127.0.0.1:9092"}, nil)
			}
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
			var fe *morse.FieldError
			if errors.As(err, &fe) {
				require.Equal(t, tc.err, fe.Key)
			}
		})
	}
}

func TestTLSSwitch(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		name string
		c    ClientConfig
		tls  bool
	}{
		{"nothing set", ClientConfig{}, false},
		{"a tls option turns it on", ClientConfig{Config: tlsclient.Config{InsecureSkipVerify: true}}, true},
		{"enable_tls", ClientConfig{EnableTLS: &on}, true},
		{"enable_tls off wins", ClientConfig{EnableTLS: &off, Config: tlsclient.Config{ServerName: "x"}}, false},
		{"tls_enable", ClientConfig{Config: tlsclient.Config{Enable: &on}}, true},
	} {
		cfg, err := tc.c.tlsConfig()
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.tls, cfg != nil, tc.name)
	}
}

func TestWarnings(t *testing.T) {
	full, zero := true, 0
	c := &ClientConfig{Version: "2.0.0", MetadataFull: &full, MetadataRetryMax: 3, CA: "ca.pem",
		SASLConfig: SASLConfig{SASLVersion: &zero}}
	require.Len(t, c.Warnings(), 5)
	require.Empty(t, (&ClientConfig{}).Warnings())
}
