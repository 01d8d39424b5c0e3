package testserver

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/morse-agent/morse/internal/testutil"
)

// SecureNodeExporter is a node_exporter of its own that serves HTTPS only, with the test
// certificates, and asks every request for basic auth: the real exporter behind the
// credentials and TLS options of inputs.prometheus.
type SecureNodeExporter struct {
	c *child
	// Certs are the CA and certificates it serves with; its certificate names 127.0.0.1.
	Certs *testutil.Certs
	// User and Password are the credentials it takes.
	User, Password string
}

// URL is the exporter's metrics endpoint, https://127.0.0.1:PORT/metrics.
func (n *SecureNodeExporter) URL() string { return "https://" + n.c.addr + "/metrics" }

// StartSecureNodeExporter starts a node_exporter with its web configuration (exporter
// toolkit: tls_server_config and basic_auth_users) on a free port of 127.0.0.1, with only
// the loadavg collector, and stops it when the test ends.
func StartSecureNodeExporter(t testing.TB) *SecureNodeExporter {
	t.Helper()
	bin, err := cachedBinary("MORSE_NODE_EXPORTER", "node-exporter", NodeExporterVersion, "prometheus-node-exporter", "scripts/ensure-prometheus.sh")
	require.NoError(t, err)
	n := &SecureNodeExporter{Certs: testutil.NewCerts(t), User: "morse", Password: "s3cret"}
	hash, err := bcrypt.GenerateFromPassword([]byte(n.Password), bcrypt.MinCost)
	require.NoError(t, err)
	dir := t.TempDir()
	web := filepath.Join(dir, "web.yml")
	require.NoError(t, os.WriteFile(web, fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		n.Certs.ServerCert, n.Certs.ServerKey, n.User, hash), 0o600))
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: n.Certs.ClientTLS(false)}}
	defer hc.CloseIdleConnections()
	n.c, err = startChildProbe("node_exporter", bin, dir, func(addr string) []string {
		return []string{"--web.listen-address=" + addr, "--web.config.file=" + web, "--collector.disable-defaults",
			"--collector.loadavg", "--log.level=warn"}
	}, func(addr string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		req.SetBasicAuth(n.User, n.Password)
		return hc.Do(req)
	})
	require.NoError(t, err, "testserver: the secure node_exporter did not start")
	t.Cleanup(n.c.stop)
	return n
}

// StartTextfileNodeExporter starts a node_exporter of its own on a free port of 127.0.0.1,
// with the collectors of SharedNodeExporter and the textfile collector serving files, a
// map of file name (ending in .prom) to text exposition: the real exporter serving the
// shapes its own collectors do not (histograms, NaN, infinities, escaped label values). It
// stops when the test ends.
func StartTextfileNodeExporter(t testing.TB, files map[string]string) *NodeExporter {
	t.Helper()
	bin, err := cachedBinary("MORSE_NODE_EXPORTER", "node-exporter", NodeExporterVersion, "prometheus-node-exporter", "scripts/ensure-prometheus.sh")
	require.NoError(t, err)
	dir := t.TempDir()
	textDir := filepath.Join(dir, "textfile")
	require.NoError(t, os.Mkdir(textDir, 0o755))
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(textDir, name), []byte(text), 0o644))
	}
	c, err := startChild("node_exporter", bin, dir, func(addr string) []string {
		return []string{"--web.listen-address=" + addr, "--collector.disable-defaults", "--collector.cpu",
			"--collector.meminfo", "--collector.loadavg", "--collector.uname",
			"--collector.textfile", "--collector.textfile.directory=" + textDir, "--log.level=warn"}
	}, "/metrics")
	require.NoError(t, err, "testserver: node_exporter did not start")
	t.Cleanup(c.stop)
	return &NodeExporter{c: c}
}
