package prometheus

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// load loads a config as the agent does, from text.
func load(text string) (*config.Config, error) {
	return config.Load(config.Options{Sources: []config.Source{{Name: "morse.conf", Data: []byte(text)}},
		LookupEnv: func(string) (string, bool) { return "", false }})
}

// TestRefusals: what morse does not do is refused at load, every problem in one run, each
// under its key with what to do instead.
func TestRefusals(t *testing.T) {
	_, err := load(`
[[inputs.prometheus]]
  urls = ["unix:///run/exporter.sock", "ftp://host/metrics"]
  monitor_kubernetes_pods = true
  kubernetes_services = ["http://svc:9100/metrics"]
  content_type_override = "openmetrics-text"
  bearer_token = "/run/token"
  bearer_token_string = "tok"
  metric_version = 3
  [inputs.prometheus.consul]
    enabled = true
  [inputs.prometheus.http_service_discovery]
    enabled = true
`)
	require.Error(t, err)
	for _, want := range []string{
		`inputs.prometheus.urls: "unix:///run/exporter.sock": unix sockets are not supported; scrape over http or https`,
		`inputs.prometheus.urls: "ftp://host/metrics" is not an http:// or https:// URL`,
		"inputs.prometheus.monitor_kubernetes_pods: Kubernetes pod discovery is not supported: morse does not talk to Kubernetes' API; list the pods' endpoints in urls, or scrape them with Prometheus or vmagent",
		"inputs.prometheus.kubernetes_services: Kubernetes services are not supported: list their endpoints in urls",
		`inputs.prometheus.content_type_override: "openmetrics-text" is not supported`,
		"inputs.prometheus.bearer_token_string: set bearer_token (a file) or bearer_token_string, not both",
		"inputs.prometheus.metric_version: must be 1 or 2, got 3",
		"inputs.prometheus.consul.enabled: Consul discovery is not supported: list the services' endpoints in urls",
		"inputs.prometheus.http_service_discovery.enabled: HTTP service discovery is not supported: list the endpoints in urls",
	} {
		require.Contains(t, err.Error(), want)
	}
	require.Equal(t, 9, strings.Count(err.Error(), "inputs.prometheus."), err.Error())

	// The options that only refine discovery are accepted while discovery is off, as in
	// Telegraf, where they do nothing without it.
	_, err = load(`
[[inputs.prometheus]]
  urls = ["http://127.0.0.1:9100/metrics"]
  monitor_kubernetes_pods = false
  monitor_kubernetes_pods_namespace = "default"
  pod_scrape_scope = "cluster"
  [inputs.prometheus.consul]
    enabled = false
    agent = "http://localhost:8500"
`)
	require.NoError(t, err)
}

// TestNamepassOnScrapes runs an agent whose prometheus input scrapes the real node_exporter
// with the filters a Telegraf config sets on it: namepass on the measurements of
// metric_version 1, and on version 2, where every measurement is prometheus, fieldpass on
// the fields named after the families. Only what they pass reaches the output.
func TestNamepassOnScrapes(t *testing.T) {
	node := testserver.SharedNodeExporter(t)
	cfg, err := load(`
[agent]
  interval = "50ms"
  flush_interval = "50ms"
  omit_hostname = true
[[inputs.prometheus]]
  urls = ["` + node.URL() + `"]
  namepass = ["node_load*", "go_gc_duration_seconds"]
[[inputs.prometheus]]
  urls = ["` + node.URL() + `"]
  metric_version = 2
  fieldpass = ["node_memory_MemTotal_bytes"]
  [inputs.prometheus.tags]
    version = "2"
`)
	require.NoError(t, err)
	out := &testutil.ScriptOutput{}
	cfg.AddOutput("sink", out)
	testserver.RunAgent(t, cfg)
	seen := func() map[string]bool {
		names := map[string]bool{}
		for _, m := range out.Metrics() {
			names[m.Name()+" "+fieldKeys(m)] = true
		}
		return names
	}
	want := map[string]bool{
		"node_load1 gauge": true, "node_load5 gauge": true, "node_load15 gauge": true,
		"go_gc_duration_seconds 0,0.25,0.5,0.75,1,count,sum": true,
		"prometheus node_memory_MemTotal_bytes":              true,
	}
	require.Eventually(t, func() bool { return len(seen()) >= len(want) }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, want, seen())
	for _, m := range out.Metrics() {
		if v, _ := m.Tag("version"); v == "2" {
			require.Equal(t, "prometheus", m.Name())
		}
	}
}

// fieldKeys is a metric's field keys, sorted, comma-separated.
func fieldKeys(m morse.Metric) string {
	var keys []string
	for _, f := range m.Fields() {
		keys = append(keys, f.Key)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
