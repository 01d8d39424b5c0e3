package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var checkDir = filepath.Join("testdata", "telegraf-configs")

// TestConfigCheckTelegrafConfigs runs `morse config check` on Telegraf configs in the styles
// of a helm chart, an ansible role (a file and a telegraf.d directory) and a compose stack:
// each plugin and option is classified, and the exit status says whether morse would run it.
func TestConfigCheckTelegrafConfigs(t *testing.T) {
	for k, v := range map[string]string{"HOSTNAME": "pod-1", "INFLUX_URL": "http://127.0.0.1:8086", "INFLUX_TOKEN": "t",
		"INFLUX_ORG": "o", "INFLUX_BUCKET": "b", "NODE_NAME": "n1", "TELEGRAF_INTERVAL": "10s", "INFLUXDB_DB": "telegraf"} {
		t.Setenv(k, v)
	}
	t.Run("ansible runs with warnings", func(t *testing.T) {
		out, stderr, code := runMorse(t, "config", "check", filepath.Join(checkDir, "ansible"))
		require.Zero(t, code, stderr+out)
		require.Contains(t, out, "  warned      mountpoints (line 7): removed in Telegraf 1.30.0 (deprecated since 0.10.2): morse reads it as mount_points; use mount_points instead [docs/telegraf-compat.md#deprecated-and-removed-options]")
		require.Contains(t, out, "  warned      ssl_ca (line 16): removed in Telegraf 1.35.0 (deprecated since 1.7.0): morse reads it as tls_ca")
		require.Contains(t, out, "  warned      pid_tag (line 11): deprecated in Telegraf since 1.29.0")
		require.Contains(t, out, "  differs     data_format (line 17): \"influx\" (default), \"json\", \"json_v2\", \"csv\", \"grok\"")
		require.Contains(t, out, "ansible/telegraf.conf:6: agent.utc: removed in Telegraf 1.35.0")
		require.Contains(t, out, "5 plugins (0 unsupported), 17 options: 9 same, 6 warned, 2 differ, 0 unsupported\nmorse would run this config\n")
	})
	t.Run("helm lacks kubernetes", func(t *testing.T) {
		out, _, code := runMorse(t, "config", "check", filepath.Join(checkDir, "helm", "telegraf.conf"))
		require.Equal(t, exitFailed, code, out)
		require.Contains(t, out, "helm/telegraf.conf:31  inputs.kubernetes  unsupported: morse has no inputs.kubernetes plugin")
		require.Contains(t, out, "helm/telegraf.conf:36  outputs.influxdb_v2  same\n  differs     urls (line 37)")
		require.Contains(t, out, "morse would not run this config: 1 problems\n  "+filepath.Join(checkDir, "helm", "telegraf.conf")+":31: inputs.kubernetes: unknown input plugin\n")
		require.NotContains(t, out, "warning", "every variable is set")
	})
	t.Run("compose: docker's removed total is refused", func(t *testing.T) {
		out, _, code := runMorse(t, "config", "check", filepath.Join(checkDir, "compose"))
		require.Equal(t, exitFailed, code, out)
		require.Contains(t, out, "inputs.docker  same\n  warned      container_names (line 8): removed in Telegraf 1.35.0 (deprecated since 1.4.0): morse reads it as container_name_include")
		require.Contains(t, out, "  warned      perdevice (line 9): removed in Telegraf 1.35.0 (deprecated since 1.18.0): morse reads it as perdevice_include")
		require.Contains(t, out, "  unsupported total (line 10): unknown key: inputs.docker in morse has no such option")
		require.Contains(t, out, "inputs.statsd  same\n  warned      parse_data_dog_tags (line 14)")
		require.Contains(t, out, "4 plugins (0 unsupported), 9 options: 4 same, 3 warned, 1 differ, 1 unsupported\n")
		require.Contains(t, out, "morse would not run this config: 1 problems\n  "+filepath.Join(checkDir, "compose", "telegraf.conf")+":10: inputs.docker.total: unknown key\n")
	})
	t.Run("no argument", func(t *testing.T) {
		_, stderr, code := runMorse(t, "config", "check")
		require.Equal(t, exitBadArgs, code)
		require.Contains(t, stderr, "usage: morse config check FILE|DIR...")
	})
}
