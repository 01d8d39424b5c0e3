package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/plugins/inputs/diskio"
	influxdbv2 "github.com/morse-agent/morse/plugins/outputs/influxdb_v2"

	_ "github.com/morse-agent/morse/plugins/all"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestBareVarsOfAHelmChartAndAnInfluxDBv2Output loads the two configs of issue 35 that
// Telegraf reads with bare $VAR: a helm chart's hostname and an InfluxDB v2 output's
// token, organization and bucket, with the values the environment gives.
func TestBareVarsOfAHelmChartAndAnInfluxDBv2Output(t *testing.T) {
	text := `
[agent]
  hostname = "$HOSTNAME"
  omit_hostname = false
[[inputs.mem]]
[[outputs.influxdb_v2]]
  urls = ["$INFLUX_URL"]
  token = "$INFLUX_TOKEN"
  organization = "$INFLUX_ORG"
  bucket = "$INFLUX_BUCKET"
`
	cfg, err := config.Load(config.Options{
		Sources: []config.Source{{Name: "telegraf.conf", Data: []byte(text)}},
		LookupEnv: envOf(map[string]string{
			"HOSTNAME": "telegraf-ds-x7k2p", "INFLUX_URL": "http://127.0.0.1:8086",
			"INFLUX_TOKEN": "s3cr3t==", "INFLUX_ORG": "acme", "INFLUX_BUCKET": "k8s",
		}),
	})
	require.NoError(t, err)
	require.Equal(t, "telegraf-ds-x7k2p", cfg.Agent.Hostname)
	out := cfg.Outputs[0].Plugin.(*influxdbv2.InfluxDBv2)
	require.Equal(t, []string{"http://127.0.0.1:8086"}, out.URLs)
	require.True(t, out.Token.Matches("s3cr3t=="))
	require.Equal(t, "acme", out.Organization)
	require.Equal(t, "k8s", out.Bucket)
	require.Empty(t, cfg.Warnings)
}

// TestUnsetBareVarIsKeptAndWarned: Telegraf keeps an unset $VAR as written; morse does too,
// and says so once, at the file and line.
func TestUnsetBareVarIsKeptAndWarned(t *testing.T) {
	text := "[agent]\n  hostname = \"$HOSTNAME\"\n[[inputs.mem]]\n  # $NOT_IN_A_COMMENT\n"
	cfg, err := config.Load(config.Options{
		Sources:   []config.Source{{Name: "telegraf.conf", Data: []byte(text)}},
		LookupEnv: envOf(nil),
	})
	require.NoError(t, err)
	require.Equal(t, "$HOSTNAME", cfg.Agent.Hostname)
	require.Equal(t, []config.Warning{{File: "telegraf.conf", Line: 2, Key: "HOSTNAME",
		Msg: "environment variable HOSTNAME is not set: $HOSTNAME is kept as written, as Telegraf keeps it"}}, cfg.Warnings)
	require.Equal(t, "telegraf.conf:2: HOSTNAME: environment variable HOSTNAME is not set: $HOSTNAME is kept as written, as Telegraf keeps it",
		cfg.Warnings[0].String())
}

// TestTemplateNamesAreNoMissingVariables: diskio's name_templates and regex's replacement
// take $NAME of their own, which stay as written, as in Telegraf, with no warning.
func TestTemplateNamesAreNoMissingVariables(t *testing.T) {
	text := `
[[inputs.diskio]]
  name_templates = ["$ID_FS_LABEL", "${DM_VG_NAME}-${DM_LV_NAME}"]
[[processors.regex]]
  [[processors.regex.tags]]
    key = "path"
    pattern = "^/api/(?P<route>\\w+)/.*$"
    replacement = "${route}"
`
	cfg, err := config.Load(config.Options{
		Sources:   []config.Source{{Name: "t.conf", Data: []byte(text)}},
		LookupEnv: envOf(nil),
	})
	require.NoError(t, err)
	require.Empty(t, cfg.Warnings)
	require.Equal(t, []string{"$ID_FS_LABEL", "${DM_VG_NAME}-${DM_LV_NAME}"},
		cfg.Inputs[0].Plugin.(*diskio.DiskIO).NameTemplates)
}
