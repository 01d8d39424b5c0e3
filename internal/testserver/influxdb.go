// Package testserver runs real servers for integration tests: InfluxDB 1.6.7 in a container
// built FROM scratch, and QuestDB, Kafka and VictoriaMetrics as child processes of the test
// (see their files); and what a test puts between a client and a server to cause faults or
// to see the traffic: Proxy, TCPRelay, Recorder; and a whole morse agent in this process
// (RunAgent; RunListener for a listener's tests), the agent being a server too to the
// tests that feed it; and containers of a one-program image for the tests of inputs.docker
// (StartBox).
//
// InfluxDB 1.6.7 comes from the host's Debian `influxdb` package: the harness
// copies /usr/bin/influxd and the two libraries it links (libc and the
// loader) into a temporary build context next to
// testdata/containers/influxdb/Dockerfile and builds a FROM scratch image with
// testcontainers-go. Nothing is ever pulled. The image is built at most once
// per `go test` process and is reused across processes while its tag
// (morse-test/influxdb:1.6) carries the content hash of the current files.
//
// A Docker daemon must answer on /var/run/docker.sock (DOCKER_HOST is
// honoured); `make test` starts one with scripts/ensure-docker.sh. Without
// one, StartInfluxDB fails the test: it never skips.
package testserver

import (
	"bufio"
	"context"
	"maps"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

const (
	// InfluxImageRepo and InfluxImageTag name the image the harness builds.
	InfluxImageRepo = "morse-test/influxdb"
	InfluxImageTag  = "1.6"
	// ContentHashLabel is the image label holding the sha256 of the build
	// context (Dockerfile and host binaries); a tagged image whose label
	// differs is rebuilt.
	ContentHashLabel = "org.morse-agent.test.content-hash"

	influxPort = "8086/tcp"

	// DefaultStartupTimeout bounds container start plus readiness.
	DefaultStartupTimeout = 60 * time.Second
	// influxDockerfileDir is relative to the module root.
	influxDockerfileDir = "testdata/containers/influxdb"
	moduleName          = "github.com/morse-agent/morse"
)

// The host files copied into the build context, by the name the Dockerfile
// COPYs them from. The Dockerfile puts them at the same absolute paths.
var influxHostFiles = []struct{ src, name string }{
	{"/usr/bin/influxd", "influxd"},
	{"/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6"},
	{"/lib64/ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2"},
}

func init() { setupEnv() }

// setupEnv must run before testcontainers reads its configuration (it does
// so once per process). Ryuk would need an image pull; without the host
// override testcontainers dials the daemon's gateway address instead of
// loopback.
func setupEnv() {
	_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
}

// InfluxOptions configures one InfluxDB container. The zero value gives a
// server with influxd's defaults, reporting off and the _internal monitor
// database off (so it never writes into the cache behind a test's back).
type InfluxOptions struct {
	// CacheMaxMemorySize sets [data] cache-max-memory-size, e.g. "104"
	// (bytes), "64k", "1m". Empty keeps influxd's default (1g). A write that
	// would exceed it fails with 500 "engine: cache-max-memory-size exceeded".
	CacheMaxMemorySize string
	// MaxValuesPerTag sets [data] max-values-per-tag. 0 keeps influxd's
	// default (100000); a negative value sets 0, which is unlimited.
	MaxValuesPerTag int
	// MaxSeriesPerDatabase sets [data] max-series-per-database, with the
	// same 0 / negative convention as MaxValuesPerTag (default 1000000).
	MaxSeriesPerDatabase int
	// Env adds or overrides INFLUXDB_* variables; it wins over the fields
	// above.
	Env map[string]string
	// StartupTimeout bounds start and readiness; DefaultStartupTimeout if 0.
	StartupTimeout time.Duration
}

func (o InfluxOptions) env() map[string]string {
	env := map[string]string{
		"INFLUXDB_REPORTING_DISABLED":             "true",
		"INFLUXDB_HTTP_BIND_ADDRESS":              ":8086",
		"INFLUXDB_BIND_ADDRESS":                   "127.0.0.1:8088",
		"INFLUXDB_META_DIR":                       "/var/lib/influxdb/meta",
		"INFLUXDB_DATA_DIR":                       "/var/lib/influxdb/data",
		"INFLUXDB_DATA_WAL_DIR":                   "/var/lib/influxdb/wal",
		"INFLUXDB_MONITOR_STORE_ENABLED":          "false",
		"INFLUXDB_DATA_QUERY_LOG_ENABLED":         "false",
		"INFLUXDB_HTTP_LOG_ENABLED":               "true",
		"INFLUXDB_LOGGING_SUPPRESS_LOGO":          "true",
		"INFLUXDB_CONTINUOUS_QUERIES_LOG_ENABLED": "false",
	}
	if o.CacheMaxMemorySize != "" {
		env["INFLUXDB_DATA_CACHE_MAX_MEMORY_SIZE"] = o.CacheMaxMemorySize
	}
	limit := func(key string, v int) {
		switch {
		case v > 0:
			env[key] = strconv.Itoa(v)
		case v < 0:
			env[key] = "0"
		}
	}
	limit("INFLUXDB_DATA_MAX_VALUES_PER_TAG", o.MaxValuesPerTag)
	limit("INFLUXDB_DATA_MAX_SERIES_PER_DATABASE", o.MaxSeriesPerDatabase)
	maps.Copy(env, o.Env)
	return env
}

// Influx is a running InfluxDB container. It is terminated when the test
// that started it ends.
type Influx struct {
	ctr  testcontainers.Container
	host string
	port string

	mu     sync.Mutex
	paused bool
}

// URL is the base URL, http://127.0.0.1:PORT.
func (i *Influx) URL() string { return "http://" + i.Addr() }

// Addr is the published host:port, 127.0.0.1:PORT, e.g. for a proxy in front.
func (i *Influx) Addr() string { return i.host + ":" + i.port }

// Container gives access to the testcontainers container.
func (i *Influx) Container() testcontainers.Container { return i.ctr }

// ImageInfo tells how the InfluxDB image was obtained in this process.
type ImageInfo struct {
	Ref         string        // image tag used for containers
	ContentHash string        // sha256 of the build context
	Built       bool          // false: reused an image with the same hash
	Took        time.Duration // hashing plus build (or inspection)
}

// InfluxImage builds the InfluxDB image if needed (once per process) and
// reports how it was obtained. StartInfluxDB calls it.
func InfluxImage(t testing.TB) ImageInfo {
	t.Helper()
	cli := dockerClient(t)
	influxImg.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		influxImg.info, influxImg.err = ensureInfluxImage(ctx, cli)
	})
	require.NoError(t, influxImg.err, "testserver: cannot build the InfluxDB test image")
	return influxImg.info
}

var influxImg struct {
	once sync.Once
	info ImageInfo
	err  error
}

// StartInfluxDB starts InfluxDB 1.6.7 in a container with its HTTP port
// published on a free port of 127.0.0.1, waits until GET /ping answers 204
// and registers a cleanup that terminates it. It fails the test when Docker
// is unavailable or the server does not come up.
func StartInfluxDB(t testing.TB, opts InfluxOptions) *Influx {
	t.Helper()
	img := InfluxImage(t)

	timeout := opts.StartupTimeout
	if timeout <= 0 {
		timeout = DefaultStartupTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	port := network.MustParsePort(influxPort)
	req := testcontainers.ContainerRequest{
		Image:        img.Ref,
		ExposedPorts: []string{influxPort},
		Env:          opts.env(),
		HostConfigModifier: func(hc *container.HostConfig) {
			// Publish on loopback only; HostPort "" lets Docker pick a free one.
			hc.PortBindings = network.PortMap{port: {{
				HostIP:   netip.MustParseAddr("127.0.0.1"),
				HostPort: "",
			}}}
		},
		WaitingFor: wait.ForAll(
			// docker-proxy accepts before influxd listens, so the port
			// check alone proves little; /ping is the readiness signal.
			// The internal check needs a shell, which the image lacks.
			wait.ForListeningPort(influxPort).SkipInternalCheck(),
			wait.ForHTTP("/ping").WithPort(influxPort).
				WithPollInterval(50*time.Millisecond).
				WithStatusCodeMatcher(func(status int) bool { return status == 204 }),
		).WithDeadline(timeout),
	}
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: req,
		Started:          true,
		Logger:           tclog.TestLogger(t),
	})
	in := &Influx{ctr: ctr}
	if ctr != nil {
		t.Cleanup(func() { in.terminate(t) })
	}
	require.NoError(t, err, "testserver: InfluxDB container did not start")

	in.host, err = ctr.Host(ctx)
	require.NoError(t, err)
	mapped, err := ctr.MappedPort(ctx, influxPort)
	require.NoError(t, err)
	in.port = strconv.Itoa(int(mapped.Num()))
	return in
}

// terminate unpauses if needed (a paused container cannot be stopped),
// prints the server log when the test failed, and removes the container.
func (i *Influx) terminate(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	i.mu.Lock()
	paused := i.paused
	i.paused = false
	i.mu.Unlock()
	if paused {
		if _, err := dockerClient(t).ContainerUnpause(ctx, i.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
			t.Logf("testserver: unpause before terminate: %v", err)
		}
	}
	if t.Failed() {
		i.logTail(ctx, t, 80)
	}
	if err := i.ctr.Terminate(ctx, testcontainers.StopTimeout(2*time.Second)); err != nil {
		t.Errorf("testserver: terminate InfluxDB container: %v", err)
	}
}

func (i *Influx) logTail(ctx context.Context, t testing.TB, n int) {
	rc, err := i.ctr.Logs(ctx)
	if err != nil {
		t.Logf("testserver: container logs: %v", err)
		return
	}
	defer rc.Close()
	var lines []string
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	t.Logf("testserver: last %d lines of the InfluxDB log:\n%s", len(lines), strings.Join(lines, "\n"))
}

// Pause freezes the server (docker pause): connections to URL() are still
// accepted by the port proxy but nothing answers, as with a hung server.
func (i *Influx) Pause(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	i.mu.Lock()
	defer i.mu.Unlock()
	_, err := dockerClient(t).ContainerPause(ctx, i.ctr.GetContainerID(), client.ContainerPauseOptions{})
	require.NoError(t, err, "testserver: docker pause")
	i.paused = true
}

// Unpause resumes a paused server; it answers again at the same URL().
func (i *Influx) Unpause(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	i.mu.Lock()
	defer i.mu.Unlock()
	_, err := dockerClient(t).ContainerUnpause(ctx, i.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	require.NoError(t, err, "testserver: docker unpause")
	i.paused = false
}

// ---- Docker client ---------------------------------------------------------

var docker struct {
	once sync.Once
	cli  *testcontainers.DockerClient
	err  error
}

// dockerClient returns the process's Docker client, failing the test with
// a clear message when no daemon answers.
func dockerClient(t testing.TB) *testcontainers.DockerClient {
	t.Helper()
	setupEnv()
	docker.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		docker.cli, docker.err = testcontainers.NewDockerClientWithOpts(ctx)
		if docker.err == nil {
			_, docker.err = docker.cli.Ping(ctx, client.PingOptions{})
		}
	})
	if docker.err != nil {
		sock := "missing"
		if _, err := os.Stat("/var/run/docker.sock"); err == nil {
			sock = "present, but nothing answers on it"
		}
		t.Fatalf("testserver: no Docker daemon answers (DOCKER_HOST=%q, /var/run/docker.sock %s; testcontainers: %v).\n"+
			"Integration tests need one: run `scripts/ensure-docker.sh` as root "+
			"(`make test` does) or point DOCKER_HOST at a daemon.", os.Getenv("DOCKER_HOST"), sock, docker.err)
	}
	return docker.cli
}
