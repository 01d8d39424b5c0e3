package health_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestContainerHealthProbe is the container health probe of issue 36: the built agent runs
// in a container made FROM scratch, with Docker's health check running curl -f against
// outputs.health, and writes to a real VictoriaMetrics through outputs.influxdb. When the
// test stops VictoriaMetrics, the endpoint answers 503, naming the output that backs off,
// and Docker marks the container unhealthy; when it starts it again, 200 and healthy.
// The container shares the host's network, so that everything stays on 127.0.0.1.
func TestContainerHealthProbe(t *testing.T) {
	vm := testserver.StartVictoriaMetrics(t, testserver.VictoriaMetricsOptions{})
	ports, err := testutil.FreePorts("tcp", 1)
	require.NoError(t, err)
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	buildDir := probeImageContext(t, ctx, fmt.Sprintf(`
[agent]
  interval = "250ms"
  flush_interval = "250ms"
  omit_hostname = true

[[inputs.internal]]

[[outputs.influxdb]]
  urls = ["%s"]
  skip_database_creation = true
  timeout = "2s"

[[outputs.health]]
  service_address = "%s"
  unhealthy_after_failing = "1s"
  namepass = ["internal_agent"]

  [[outputs.health.contains]]
    field = "metrics_gathered"
`, vm.URL(), strings.TrimSuffix(url, "/")))

	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			FromDockerfile: testcontainers.FromDockerfile{
				Context: buildDir, Dockerfile: "Dockerfile",
				Repo: "morse-test/morse-probe", Tag: strconv.Itoa(os.Getpid()),
			},
			ConfigModifier: func(c *container.Config) {
				c.Healthcheck = &container.HealthConfig{
					Test:     []string{"CMD", "/usr/bin/curl", "-fsS", "-m", "2", "-o", "/dev/null", url},
					Interval: 250 * time.Millisecond, Timeout: 3 * time.Second, Retries: 1,
				}
			},
			HostConfigModifier: func(hc *container.HostConfig) { hc.NetworkMode = "host" },
		},
		Started: true,
		Logger:  tclog.TestLogger(t),
	})
	if ctr != nil {
		t.Cleanup(func() {
			if t.Failed() {
				logTail(t, ctr)
			}
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer ccancel()
			require.NoError(t, ctr.Terminate(cctx, testcontainers.StopTimeout(5*time.Second)))
		})
	}
	require.NoError(t, err, "the probe container starts")

	health := func() string {
		st, err := ctr.State(ctx)
		if err != nil || st.Health == nil {
			return fmt.Sprint(err)
		}
		return string(st.Health.Status)
	}
	becomes := func(want string, status int, body string) {
		t.Helper()
		require.Eventually(t, func() bool { return health() == want }, 90*time.Second, 50*time.Millisecond,
			"Docker's health check says %s", want)
		got, b := probe(url)
		require.Equal(t, status, got, b)
		require.Contains(t, b, body)
	}
	becomes("healthy", http.StatusOK, "OK")
	require.NotEmpty(t, vm.ExportSamples(t, `{__name__="internal_agent_metrics_gathered"}`, 1, 30*time.Second),
		"the agent writes to VictoriaMetrics")

	stopped := time.Now()
	vm.Stop(t)
	becomes("unhealthy", http.StatusServiceUnavailable, "backing off: outputs.influxdb (failing for")
	restarted := time.Now()
	t.Logf("unhealthy %s after the sink stopped (unhealthy_after_failing = 1s)", restarted.Sub(stopped).Round(time.Millisecond))
	vm.Restart(t)
	becomes("healthy", http.StatusOK, "OK")
	t.Logf("healthy again %s after the sink was restarted", time.Since(restarted).Round(time.Millisecond))
}

// probeImageContext assembles the build context of testdata/containers/morse-probe: its
// Dockerfile, and rootfs/ with the agent built for the test, curl and its libraries, and
// the config.
func probeImageContext(t *testing.T, ctx context.Context, config string) string {
	t.Helper()
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "containers", "morse-probe", "Dockerfile"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), dockerfile, 0o644))
	require.NoError(t, testutil.BuildMorse(ctx, filepath.Join(rootfs, "usr", "bin", "morse")))
	copyWithLibraries(t, "/usr/bin/curl", rootfs)
	require.NoError(t, os.MkdirAll(filepath.Join(rootfs, "etc", "morse"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(rootfs, "etc", "morse", "morse.conf"), []byte(config), 0o644))
	return dir
}

// copyWithLibraries puts bin under rootfs at its own path, with every shared library that
// ldd lists for it, the loader included, each at its absolute path.
func copyWithLibraries(t *testing.T, bin, rootfs string) {
	t.Helper()
	_, err := os.Stat(bin)
	require.NoError(t, err, "%s: install Debian's curl package (make test-deps)", bin)
	out, err := exec.Command("ldd", bin).Output()
	require.NoError(t, err, "ldd %s", bin)
	files := []string{bin}
	for _, line := range strings.Split(string(out), "\n") {
		// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)"
		for _, word := range strings.Fields(line) {
			if strings.HasPrefix(word, "/") {
				files = append(files, word)
				break
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f) // through symbolic links: the image holds plain files
		require.NoError(t, err)
		dst := filepath.Join(rootfs, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, b, 0o755))
	}
}

// logTail prints the agent's log from the container.
func logTail(t *testing.T, ctr testcontainers.Container) {
	rc, err := ctr.Logs(context.Background())
	if err != nil {
		t.Logf("container logs: %v", err)
		return
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	lines := strings.Split(string(b), "\n")
	t.Logf("the agent's log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
}
