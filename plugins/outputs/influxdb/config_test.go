package influxdb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
)

func TestRegistered(t *testing.T) {
	info, ok := morse.DefaultRegistry().Output("influxdb")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "[[outputs.influxdb]]\n"))
	out, ok := info.New().(*InfluxDB)
	require.True(t, ok)
	require.Equal(t, New(), out)
}

func TestDefaults(t *testing.T) {
	o := New()
	require.NoError(t, o.Validate())
	require.Equal(t, []string{"http://127.0.0.1:8086"}, o.urls())
	require.Equal(t, "telegraf", o.Database)
	require.Equal(t, 5*time.Second, time.Duration(o.Timeout))
	require.Equal(t, "identity", o.ContentEncoding)
	require.False(t, o.SkipDatabaseCreation)
	require.False(t, o.InsecureSkipVerify)
	cfg, err := o.Config.TLSConfig()
	require.NoError(t, err)
	require.Nil(t, cfg, "no TLS option: Go's verified defaults")
	o.ServerName = "db.example"
	cfg, err = o.Config.TLSConfig()
	require.NoError(t, err)
	require.False(t, cfg.InsecureSkipVerify)
	require.EqualValues(t, 0x0303, cfg.MinVersion, "TLS 1.2 at least")
}

// load decodes a config text through the real loader.
func load(t *testing.T, text string) (*InfluxDB, error) {
	t.Helper()
	cfg, err := config.Load(config.Options{
		Sources:   []config.Source{{Name: "test.conf", Data: []byte(text)}},
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		return nil, err
	}
	require.Len(t, cfg.Outputs, 1)
	return cfg.Outputs[0].Plugin.(*InfluxDB), nil
}

func TestSampleConfigLoads(t *testing.T) {
	o, err := load(t, sampleConfig)
	require.NoError(t, err)
	require.Equal(t, New().Database, o.Database)
	require.Equal(t, []string{DefaultURL}, o.URLs)

	// Every commented option, uncommented, is a known key with a valid value.
	option := regexp.MustCompile(`(?m)^  # ([a-z_]+ = .*)$`)
	all := option.ReplaceAllString(sampleConfig, "  $1")
	require.Len(t, option.FindAllString(sampleConfig, -1), 24, "every option but the deprecated url, precision and udp_payload")
	o, err = load(t, all)
	require.NoError(t, err)
	require.Equal(t, "gzip", o.ContentEncoding)
	require.Equal(t, morse.Secret("metricsmetricsmetricsmetrics"), o.Password)
	require.Equal(t, map[string]string{"X-Special-Header": "Special-Value"}, o.HTTPHeaders)
	require.Equal(t, "/etc/morse/ca.pem", o.CA)
}

func TestTelegrafConfigLoads(t *testing.T) {
	o, err := load(t, `
[[outputs.influxdb]]
  url = "http://127.0.0.1:8086"   # deprecated in Telegraf, still read
  urls = ["http://10.0.0.1:8086", "https://10.0.0.2:8086"]
  database = "metrics"
  retention_policy = "two_weeks"
  write_consistency = "any"
  timeout = "7s"
  username = "telegraf"
  password = "${NOT_SET:-s3cret}"
  precision = "s"                  # ignored, as by Telegraf
  skip_database_creation = true
  insecure_skip_verify = false
`)
	require.NoError(t, err)
	require.Equal(t, []string{"http://10.0.0.1:8086", "https://10.0.0.2:8086", "http://127.0.0.1:8086"}, o.urls())
	require.Equal(t, 7*time.Second, time.Duration(o.Timeout))
	require.Equal(t, morse.Secret("s3cret"), o.Password)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*InfluxDB)
		key  string
	}{
		{"udp url", func(o *InfluxDB) { o.URLs = []string{"udp://127.0.0.1:8089"} }, "urls"},
		{"no scheme", func(o *InfluxDB) { o.URLs = []string{"127.0.0.1:8086"} }, "urls"},
		{"credentials in the url", func(o *InfluxDB) { o.URLs = []string{"http://u:p@127.0.0.1:8086"} }, "urls"},
		{"no database", func(o *InfluxDB) { o.Database = "" }, "database"},
		{"consistency", func(o *InfluxDB) { o.WriteConsistency = "most" }, "write_consistency"},
		{"encoding", func(o *InfluxDB) { o.ContentEncoding = "br" }, "content_encoding"},
		{"timeout", func(o *InfluxDB) { o.Timeout = -1 }, "timeout"},
		{"header", func(o *InfluxDB) { o.HTTPHeaders = map[string]string{"Bad:Name": "x"} }, "http_headers"},
		{"cert without key", func(o *InfluxDB) { o.Cert = "/etc/cert.pem" }, "tls_cert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New()
			tt.mod(o)
			err := o.Validate()
			var fe *morse.FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tt.key, fe.Key)
			require.NotContains(t, err.Error(), ":p@", "no credentials in the message")
		})
	}
}

func TestPasswordIsNeverShown(t *testing.T) {
	o := New()
	o.Password = "hunter2-secret"
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "password", o.Password, "output", o)
	text, err := o.Password.MarshalText()
	require.NoError(t, err)
	js, err := json.Marshal(o)
	require.NoError(t, err)
	for _, s := range []string{
		fmt.Sprintf("%v %s %+v %#v", o.Password, o.Password, o, o.Password),
		logs.String(), string(text), string(js),
	} {
		require.NotContains(t, s, "hunter2")
	}
	require.Contains(t, string(js), "redacted")
	var back morse.Secret
	require.NoError(t, back.UnmarshalText([]byte("hunter2-secret")))
	require.Equal(t, o.Password, back)
}
