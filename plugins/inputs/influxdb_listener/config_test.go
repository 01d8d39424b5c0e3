package influxdblistener

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

// TestTelegrafOptionsLoad loads a table written with Telegraf's option names through the
// real config loader, and checks that the secrets in it never print.
func TestTelegrafOptionsLoad(t *testing.T) {
	cfg, err := config.Load(config.Options{
		LookupEnv: func(k string) (string, bool) { return map[string]string{"PW": "pa55", "TOK": "t0k"}[k], true },
		Sources: []config.Source{{Name: "t.conf", Data: []byte(`
[[inputs.influxdb_listener]]
  service_address = "127.0.0.1:0"
  read_timeout = "5s"
  write_timeout = "7s"
  max_body_size = "1MiB"
  max_line_size = "64KiB"
  max_connections = 10
  database_tag = "db"
  retention_policy_tag = "rp"
  basic_username = "writer"
  basic_password = "${PW}"
  token = "${TOK}"
  tls_cert = "cert.pem"
  tls_key = "key.pem"
  tls_allowed_cacerts = ["ca.pem"]
  backpressure = false
  backpressure_max_wait = "2500ms"
`)}}})
	require.NoError(t, err)
	l := cfg.Inputs[0].Plugin.(*InfluxDBListener)
	require.Equal(t, morse.Duration(5*time.Second), l.ReadTimeout)
	require.Equal(t, morse.Duration(7*time.Second), l.WriteTimeout)
	require.Equal(t, morse.Size(1<<20), l.MaxBodySize)
	require.Equal(t, morse.Size(64<<10), l.MaxLineSize)
	require.Equal(t, 10, l.MaxConnections)
	require.Equal(t, "db", l.DatabaseTag)
	require.Equal(t, "rp", l.RetentionPolicyTag)
	require.True(t, l.BasicPassword.Matches("pa55"))
	require.True(t, l.Token.Matches("t0k"))
	require.Equal(t, []string{"ca.pem"}, l.AllowedCACerts)
	require.False(t, l.Backpressure)
	require.Equal(t, morse.Duration(2500*time.Millisecond), l.BackpressureMaxWait)
	dump := fmt.Sprintf("%v %+v", l, l)
	require.NotContains(t, dump, "pa55")
	require.NotContains(t, dump, "t0k")
}
