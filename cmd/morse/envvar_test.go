package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelmChartHostnameFromBareVar runs the binary on a helm chart's config, whose agent
// hostname is the bare "$HOSTNAME" that Kubernetes sets to the pod's name: every metric
// carries the pod's name as its host tag, as with Telegraf.
func TestHelmChartHostnameFromBareVar(t *testing.T) {
	t.Setenv("HOSTNAME", "telegraf-ds-x7k2p")
	conf := writeFile(t, t.TempDir(), "telegraf.conf", `
[agent]
  interval = "10s"
  hostname = "$HOSTNAME"
  omit_hostname = false
[[inputs.mem]]
[[outputs.file]]
  files = ["stdout"]
`)
	out, stderr, code := runMorse(t, "--test", "--config", filepath.Clean(conf))
	require.Zero(t, code, stderr)
	ms := parseTestOutput(t, out)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		host, ok := m.Tag("host")
		require.True(t, ok, "%s has a host tag", m.Name())
		require.Equal(t, "telegraf-ds-x7k2p", host)
	}
}
