package prometheus

import (
	"errors"
	"net/url"

	"github.com/morse-agent/morse"
)

// Consul is Telegraf's [inputs.prometheus.consul] table. morse has no Consul discovery:
// the table is accepted while enabled is false and refused otherwise.
type Consul struct {
	Enabled       bool           `toml:"enabled"`
	Agent         string         `toml:"agent"`
	QueryInterval morse.Duration `toml:"query_interval"`
	Queries       []ConsulQuery  `toml:"query"`
}

// ConsulQuery is one [[inputs.prometheus.consul.query]] table.
type ConsulQuery struct {
	Name string            `toml:"name"`
	Tag  string            `toml:"tag"`
	URL  string            `toml:"url"`
	Tags map[string]string `toml:"tags"`
}

// HTTPServiceDiscovery is Telegraf's [inputs.prometheus.http_service_discovery] table,
// accepted while enabled is false and refused otherwise.
type HTTPServiceDiscovery struct {
	Enabled       bool           `toml:"enabled"`
	URL           string         `toml:"url"`
	QueryInterval morse.Duration `toml:"query_interval"`
}

// Kubernetes holds Telegraf's options of pod and service discovery. morse does not run in
// Kubernetes' API: monitor_kubernetes_pods and kubernetes_services are refused, and the
// options that only refine them are accepted and do nothing, as they do in Telegraf
// without them.
type Kubernetes struct {
	KubernetesServices      []string            `toml:"kubernetes_services"`
	KubeConfig              string              `toml:"kube_config"`
	MonitorPods             bool                `toml:"monitor_kubernetes_pods"`
	MonitorPodsMethod       string              `toml:"monitor_kubernetes_pods_method"`
	MonitorPodsScheme       string              `toml:"monitor_kubernetes_pods_scheme"`
	MonitorPodsPort         int                 `toml:"monitor_kubernetes_pods_port"`
	MonitorPodsPath         string              `toml:"monitor_kubernetes_pods_path"`
	PodScrapeScope          string              `toml:"pod_scrape_scope"`
	NodeIP                  string              `toml:"node_ip"`
	PodScrapeInterval       int                 `toml:"pod_scrape_interval"`
	PodNamespace            string              `toml:"monitor_kubernetes_pods_namespace"`
	PodNamespaceLabelName   string              `toml:"pod_namespace_label_name"`
	KubernetesLabelSelector string              `toml:"kubernetes_label_selector"`
	KubernetesFieldSelector string              `toml:"kubernetes_field_selector"`
	PodAnnotationInclude    []string            `toml:"pod_annotation_include"`
	PodAnnotationExclude    []string            `toml:"pod_annotation_exclude"`
	PodLabelInclude         []string            `toml:"pod_label_include"`
	PodLabelExclude         []string            `toml:"pod_label_exclude"`
	CacheRefreshInterval    int                 `toml:"cache_refresh_interval"`
	NamespaceAnnotationPass map[string][]string `toml:"namespace_annotation_pass"`
	NamespaceAnnotationDrop map[string][]string `toml:"namespace_annotation_drop"`
}

// Validate reports every problem of the options.
func (p *Prometheus) Validate() error {
	var errs []error
	for _, raw := range p.URLs {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			errs = append(errs, morse.Errorf("urls", "%q: %v", raw, err))
		case u.Scheme == "unix":
			errs = append(errs, morse.Errorf("urls", "%q: unix sockets are not supported; scrape over http or https", raw))
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			errs = append(errs, morse.Errorf("urls", "%q is not an http:// or https:// URL", raw))
		}
	}
	if p.MetricVersion < 0 || p.MetricVersion > 2 {
		errs = append(errs, morse.Errorf("metric_version", "must be 1 or 2, got %d", p.MetricVersion))
	}
	switch p.ContentTypeOverride {
	case "", "text", "protobuf-delimiter":
	case "protobuf-compact", "protobuf-text", "openmetrics-text", "openmetrics-protobuf":
		errs = append(errs, morse.Errorf("content_type_override", "%q is not supported: morse reads the text format and delimited protobuf (\"text\", \"protobuf-delimiter\")", p.ContentTypeOverride))
	default:
		errs = append(errs, morse.Errorf("content_type_override", "invalid %q", p.ContentTypeOverride))
	}
	if p.MonitorPods {
		errs = append(errs, morse.Errorf("monitor_kubernetes_pods", "Kubernetes pod discovery is not supported: morse does not talk to Kubernetes' API; list the pods' endpoints in urls, or scrape them with Prometheus or vmagent"))
	}
	if len(p.KubernetesServices) > 0 {
		errs = append(errs, morse.Errorf("kubernetes_services", "Kubernetes services are not supported: list their endpoints in urls"))
	}
	if p.Consul.Enabled {
		errs = append(errs, morse.Errorf("consul.enabled", "Consul discovery is not supported: list the services' endpoints in urls"))
	}
	if p.HTTPServiceDiscovery.Enabled {
		errs = append(errs, morse.Errorf("http_service_discovery.enabled", "HTTP service discovery is not supported: list the endpoints in urls"))
	}
	if p.BearerToken != "" && p.BearerTokenString.IsSet() {
		errs = append(errs, morse.Errorf("bearer_token_string", "set bearer_token (a file) or bearer_token_string, not both"))
	}
	if p.Timeout < 0 || p.ResponseTimeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	if p.ContentLengthLimit < 0 {
		errs = append(errs, morse.Errorf("content_length_limit", "must not be negative"))
	}
	if p.HTTPProxyURL != "" {
		if _, err := url.Parse(p.HTTPProxyURL); err != nil {
			errs = append(errs, morse.Errorf("http_proxy_url", "%v", err))
		}
	}
	if err := p.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
