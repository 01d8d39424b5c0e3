package config_test

import (
	"context"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/inputs/disk"
	"github.com/morse-agent/morse/plugins/inputs/procstat"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
)

// loadOld loads text with the real plugins and an empty environment.
func loadOld(t *testing.T, text string, reg *morse.Registry) *config.Config {
	t.Helper()
	cfg, err := config.Load(config.Options{
		Sources: []config.Source{{Name: "old.conf", Data: []byte(text)}}, LookupEnv: envOf(nil), Registry: reg,
	})
	require.NoError(t, err)
	return cfg
}

func warningsOf(cfg *config.Config) []string {
	var out []string
	for _, w := range cfg.Warnings {
		out = append(out, w.String())
	}
	return out
}

// TestDeprecatedTLSAndURL: ssl_* and outputs.influxdb's url, which Telegraf 1.39.3 refuses,
// load with one warning each naming the replacement, and their values land in it.
func TestDeprecatedTLSAndURL(t *testing.T) {
	certs := testutil.NewCerts(t)
	cfg := loadOld(t, `
[[outputs.influxdb]]
  url = "http://127.0.0.1:8086"
  ssl_ca = "`+certs.CA+`"
  ssl_cert = "`+certs.ClientCert+`"
  ssl_key = "`+certs.ClientKey+`"
  precision = "s"
[[outputs.influxdb]]
  urls = ["http://127.0.0.1:8087"]
  url = "http://127.0.0.1:8088"
  ssl_ca = "/etc/old-ca.pem"
  tls_ca = "`+certs.CA+`"
`, nil)
	first := cfg.Outputs[0].Plugin.(*influxdb.InfluxDB)
	require.Equal(t, []string{"http://127.0.0.1:8086"}, first.URLs)
	require.Equal(t, certs.CA, first.CA)
	require.Equal(t, certs.ClientCert, first.Cert)
	require.Equal(t, certs.ClientKey, first.Key)
	second := cfg.Outputs[1].Plugin.(*influxdb.InfluxDB)
	require.Equal(t, []string{"http://127.0.0.1:8087", "http://127.0.0.1:8088"}, second.URLs, "url joins urls, as in Telegraf")
	require.Equal(t, certs.CA, second.CA, "tls_ca wins over ssl_ca, as in Telegraf")
	require.Equal(t, []string{
		"old.conf:7: outputs.influxdb.precision: removed in Telegraf 1.35.0 (deprecated since 1.0.0): it has no effect, as in Telegraf; remove it",
		"old.conf:4: outputs.influxdb.ssl_ca: removed in Telegraf 1.35.0 (deprecated since 1.7.0): morse reads it as tls_ca; use tls_ca instead",
		"old.conf:5: outputs.influxdb.ssl_cert: removed in Telegraf 1.35.0 (deprecated since 1.7.0): morse reads it as tls_cert; use tls_cert instead",
		"old.conf:6: outputs.influxdb.ssl_key: removed in Telegraf 1.35.0 (deprecated since 1.7.0): morse reads it as tls_key; use tls_key instead",
		"old.conf:3: outputs.influxdb.url: removed in Telegraf 1.30.0 (deprecated since 0.1.9): morse reads it as urls; use urls instead",
		"old.conf:11: outputs.influxdb.ssl_ca: removed in Telegraf 1.35.0 (deprecated since 1.7.0): morse reads it as tls_ca; use tls_ca instead (tls_ca is set too and wins, as in Telegraf)",
		"old.conf:10: outputs.influxdb.url: removed in Telegraf 1.30.0 (deprecated since 0.1.9): morse reads it as urls; use urls instead (its value is added to urls, as in Telegraf)",
	}, warningsOf(cfg))
}

// TestDeprecatedInputsAndAgent: disk's mountpoints replaces mount_points as it did in
// Telegraf; procstat's and tail's options that Telegraf 1.39.3 still reads stay with the
// plugin and are warned of; [agent]'s removed keys are dropped with a warning.
func TestDeprecatedInputsAndAgent(t *testing.T) {
	cfg := loadOld(t, `
[agent]
  utc = true
  flush_buffer_when_full = true
[[inputs.disk]]
  mountpoints = ["/", "/home"]
[[inputs.disk]]
  mount_points = ["/var"]
  mountpoints = ["/srv"]
[[inputs.procstat]]
  pattern = "nginx"
  pid_tag = true
[[inputs.tail]]
  files = ["/var/log/x.log"]
  from_beginning = true
`, nil)
	require.Equal(t, []string{"/", "/home"}, cfg.Inputs[0].Plugin.(*disk.Disk).MountPoints)
	require.Equal(t, []string{"/srv"}, cfg.Inputs[1].Plugin.(*disk.Disk).MountPoints, "the old key replaced the new one in Telegraf")
	require.True(t, cfg.Inputs[2].Plugin.(*procstat.Procstat).PidTag, "the plugin still reads pid_tag")
	require.Equal(t, []string{
		"old.conf:4: agent.flush_buffer_when_full: removed in Telegraf 1.35.0 (deprecated since 0.13.0): it has no effect, as in Telegraf; remove it",
		"old.conf:3: agent.utc: removed in Telegraf 1.35.0 (deprecated since 1.0.0): it has no effect, as in Telegraf; remove it",
		"old.conf:6: inputs.disk.mountpoints: removed in Telegraf 1.30.0 (deprecated since 0.10.2): morse reads it as mount_points; use mount_points instead",
		"old.conf:9: inputs.disk.mountpoints: removed in Telegraf 1.30.0 (deprecated since 0.10.2): morse reads it as mount_points; use mount_points instead (it replaces the mount_points that is set too, as in Telegraf)",
		"old.conf:12: inputs.procstat.pid_tag: deprecated in Telegraf since 1.29.0: morse still reads it, as Telegraf 1.39.3 does; use tag_with instead",
		"old.conf:15: inputs.tail.from_beginning: deprecated in Telegraf since 1.34.0: morse still reads it, as Telegraf 1.39.3 does; use initial_read_offset instead",
	}, warningsOf(cfg))
}

// futureDocker and futureStatsd stand for plugins morse does not have yet: registering
// them is all it takes for the table's entries to apply.
type futureDocker struct {
	ContainerNameInclude []string `toml:"container_name_include"`
	PerDeviceInclude     []string `toml:"perdevice_include"`
}

func (*futureDocker) Gather(context.Context, morse.Accumulator) error { return nil }

type futureStatsd struct {
	DataDogExtensions bool `toml:"datadog_extensions"`
}

func (*futureStatsd) Gather(context.Context, morse.Accumulator) error { return nil }

// TestDeprecationsApplyToPluginsAddedLater: docker's container_names and perdevice and
// statsd's parse_data_dog_tags map as Telegraf mapped them once such plugins exist.
func TestDeprecationsApplyToPluginsAddedLater(t *testing.T) {
	reg := morse.NewRegistry()
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "docker", New: func() morse.Input {
		return &futureDocker{PerDeviceInclude: []string{"cpu"}}
	}}))
	require.NoError(t, reg.AddInput(morse.InputInfo{Name: "statsd", New: func() morse.Input { return &futureStatsd{} }}))
	cfg := loadOld(t, `
[[inputs.docker]]
  container_names = ["web"]
  perdevice = true
[[inputs.docker]]
  container_name_include = ["db"]
  container_names = ["web"]
  perdevice = false
[[inputs.statsd]]
  parse_data_dog_tags = true
`, reg)
	d0, d1 := cfg.Inputs[0].Plugin.(*futureDocker), cfg.Inputs[1].Plugin.(*futureDocker)
	require.Equal(t, []string{"web"}, d0.ContainerNameInclude)
	require.Equal(t, []string{"cpu", "network", "blkio"}, d0.PerDeviceInclude, "added to the default, as Telegraf added them")
	require.Equal(t, []string{"db", "web"}, d1.ContainerNameInclude)
	require.Equal(t, []string{"cpu"}, d1.PerDeviceInclude, "perdevice = false adds nothing")
	require.True(t, cfg.Inputs[2].Plugin.(*futureStatsd).DataDogExtensions)
	require.Len(t, cfg.Warnings, 5, "one warning for each old key: %q", warningsOf(cfg))
}
