package testserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// Prometheus 2.42 and node_exporter 1.5 come from Debian's prometheus and
// prometheus-node-exporter packages, which scripts/ensure-prometheus.sh unpacks into the
// user's cache. The harness runs each as a child process on a free port of 127.0.0.1, once
// per test binary (SharedPrometheus, SharedNodeExporter), since each takes about a second
// to start; StopShared, called from TestMain, ends them, and on Linux the kernel kills them
// if the test process dies first.
//
// The shared Prometheus scrapes every second the targets that tests add with AddTarget:
// each is a file of its file_sd_configs, which Prometheus watches, so a target is scraped
// within a second or two of being added, without a restart or reload.

// PrometheusVersion and NodeExporterVersion are the versions the harness runs.
const (
	PrometheusVersion   = "2.42.0"
	NodeExporterVersion = "1.5.0"
)

// cachedBinary is testutil.CachedBinary, the one lookup of the cache's binaries.
func cachedBinary(env, dir, version, name, script string) (string, error) {
	return testutil.CachedBinary(env, dir, version, name, script)
}

// child is a server process the harness started.
type child struct {
	name, addr, log string
	cmd             *exec.Cmd
	done            chan struct{}
}

// startChild starts bin with args(addr) on a free port, retrying with another port when
// the one found was taken, and waits until GET ready answers 200.
func startChild(name, bin, dir string, args func(addr string) []string, ready string) (*child, error) {
	hc := &http.Client{Timeout: time.Second}
	return startChildProbe(name, bin, dir, args, func(addr string) (*http.Response, error) {
		return hc.Get("http://" + addr + ready)
	})
}

// startChildProbe is startChild with the readiness request of its own: the child is ready
// when probe(addr) answers 200.
func startChildProbe(name, bin, dir string, args func(addr string) []string, probe func(addr string) (*http.Response, error)) (*child, error) {
	var last error
	for range 3 {
		ports, err := testutil.FreePorts("tcp", 1)
		if err != nil {
			return nil, err
		}
		c := &child{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), done: make(chan struct{})}
		c.log = filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, ports[0]))
		lf, err := os.Create(c.log)
		if err != nil {
			return nil, err
		}
		c.cmd = exec.Command(bin, args(c.addr)...)
		c.cmd.Stdout, c.cmd.Stderr = lf, lf
		c.cmd.SysProcAttr = childAttr()
		err = c.cmd.Start()
		lf.Close()
		if err != nil {
			return nil, fmt.Errorf("starting %s: %w", bin, err)
		}
		go func() { _ = c.cmd.Wait(); close(c.done) }()
		if last = c.waitReady(probe, 30*time.Second); last == nil {
			return c, nil
		}
		c.stop()
		if !strings.Contains(c.logTail(40), "address already in use") {
			return nil, fmt.Errorf("%w\n%s", last, c.logTail(40))
		}
	}
	return nil, last
}

func (c *child) waitReady(probe func(addr string) (*http.Response, error), timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := probe(c.addr)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before answering on %s", c.name, c.addr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer on %s within %s", c.name, c.addr, timeout)
		}
	}
}

// stop ends the process: SIGTERM, then SIGKILL after ten seconds.
func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *child) logTail(n int) string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// PromServer is the shared Prometheus server.
type PromServer struct {
	c     *child
	sdDir string // where AddTarget writes its file_sd files
}

// URL is http://127.0.0.1:PORT.
func (p *PromServer) URL() string { return "http://" + p.c.addr }

// NodeExporter is the shared node_exporter.
type NodeExporter struct{ c *child }

// URL is the exporter's metrics endpoint, http://127.0.0.1:PORT/metrics.
func (n *NodeExporter) URL() string { return "http://" + n.c.addr + "/metrics" }

var shared struct {
	mu      sync.Mutex
	dir     string
	prom    *PromServer
	promErr error
	node    *NodeExporter
	nodeErr error
}

func sharedDir() (string, error) {
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "morse-testserver-")
		if err != nil {
			return "", err
		}
		shared.dir = d
	}
	return shared.dir, nil
}

// SharedPrometheus returns the test binary's Prometheus, starting it on first use. Its
// remote-write receiver is on. It fails the test when Prometheus cannot start.
func SharedPrometheus(t testing.TB) *PromServer {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.prom == nil && shared.promErr == nil {
		shared.prom, shared.promErr = startPrometheus()
	}
	require.NoError(t, shared.promErr, "testserver: Prometheus did not start")
	return shared.prom
}

func startPrometheus() (*PromServer, error) {
	bin, err := cachedBinary("MORSE_PROMETHEUS", "prometheus", PrometheusVersion, "prometheus", "scripts/ensure-prometheus.sh")
	if err != nil {
		return nil, err
	}
	base, err := sharedDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(base, "prometheus")
	p := &PromServer{sdDir: filepath.Join(dir, "sd")}
	if err := os.MkdirAll(p.sdDir, 0o755); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: tests
    file_sd_configs:
      - files: ['%s/*.json']
        refresh_interval: 1s
`, p.sdDir)
	confFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	p.c, err = startChild("prometheus", bin, dir, func(addr string) []string {
		return []string{"--config.file=" + confFile, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr, "--web.enable-remote-write-receiver", "--log.level=warn"}
	}, "/-/ready")
	return p, err
}

// AddTarget makes Prometheus scrape http://hostport+path every second, with the label
// test=name on every series, until the test ends.
func (p *PromServer) AddTarget(t testing.TB, name, hostport, path string) {
	t.Helper()
	sd := []map[string]any{{"targets": []string{hostport}, "labels": map[string]string{"test": name, "__metrics_path__": path}}}
	b, err := json.Marshal(sd)
	require.NoError(t, err)
	file := filepath.Join(p.sdDir, name+".json")
	tmp := file + ".tmp"
	require.NoError(t, os.WriteFile(tmp, b, 0o644))
	require.NoError(t, os.Rename(tmp, file)) // whole, as Prometheus reads it
	t.Cleanup(func() { _ = os.Remove(file) })
}

// PromSample is one series of an instant query: its labels (the name under "__name__")
// and value.
type PromSample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant query and returns its vector.
func (p *PromServer) Query(t testing.TB, q string) []PromSample {
	t.Helper()
	var res struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/query?query="+url.QueryEscape(q), &res)
	out := make([]PromSample, 0, len(res.Data.Result))
	for _, r := range res.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		out = append(out, PromSample{Metric: r.Metric, Value: v})
	}
	return out
}

// Types returns the type Prometheus recorded for each metric name it scraped from the
// targets whose series carry the label test=name, from its targets' metadata API.
func (p *PromServer) Types(t testing.TB, name string) map[string]string {
	t.Helper()
	var res struct {
		Data []struct {
			Metric string `json:"metric"`
			Type   string `json:"type"`
		} `json:"data"`
	}
	p.get(t, "/api/v1/targets/metadata?match_target="+url.QueryEscape(`{test="`+name+`"}`), &res)
	out := map[string]string{}
	for _, d := range res.Data {
		out[d.Metric] = d.Type
	}
	return out
}

func (p *PromServer) get(t testing.TB, path string, into any) {
	t.Helper()
	resp, err := httpClient.Get(p.URL() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "testserver: %s: %s", path, b)
	require.NoError(t, json.Unmarshal(b, into))
}

// SharedNodeExporter returns the test binary's node_exporter, starting it on first use,
// with the collectors whose series stay put between two scrapes (cpu, meminfo, loadavg,
// uname) besides its own go_*, process_* and promhttp_* series.
func SharedNodeExporter(t testing.TB) *NodeExporter {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.node == nil && shared.nodeErr == nil {
		shared.node, shared.nodeErr = startNodeExporter()
	}
	require.NoError(t, shared.nodeErr, "testserver: node_exporter did not start")
	return shared.node
}

func startNodeExporter() (*NodeExporter, error) {
	bin, err := cachedBinary("MORSE_NODE_EXPORTER", "node-exporter", NodeExporterVersion, "prometheus-node-exporter", "scripts/ensure-prometheus.sh")
	if err != nil {
		return nil, err
	}
	dir, err := sharedDir()
	if err != nil {
		return nil, err
	}
	c, err := startChild("node_exporter", bin, dir, func(addr string) []string {
		return []string{"--web.listen-address=" + addr, "--collector.disable-defaults", "--collector.cpu",
			"--collector.meminfo", "--collector.loadavg", "--collector.uname", "--log.level=warn"}
	}, "/metrics")
	if err != nil {
		return nil, err
	}
	return &NodeExporter{c: c}, nil
}

// StopShared stops the shared servers and removes their files; TestMain calls it after
// the tests ran.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.prom != nil {
		shared.prom.c.stop()
	}
	if shared.node != nil {
		shared.node.c.stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir) // a temporary directory: what is left, the system's cleanup takes
	}
	shared.prom, shared.node, shared.dir = nil, nil, ""
}
