package docker

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	_ "github.com/morse-agent/morse/plugins/inputs/internal" // the agent test's inputs.internal
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedNginx()
	os.Exit(code)
}

// overTLS gathers the fleet from the real dockerd through a relay that terminates mutual
// TLS in front of its socket, as a daemon started with --tlsverify does: with the client
// certificate, the same containers; without one, the handshake's refusal.
func (f fleet) overTLS(t *testing.T) {
	certs := testutil.NewCerts(t)
	relay := testserver.StartTCPRelay(t, "unix:/var/run/docker.sock", serverTLS(t, certs))

	d := f.newDocker(t, `endpoint = "tcp://`+relay.Addr()+`"
tls_ca = "`+certs.CA+`"
tls_cert = "`+certs.ClientCert+`"
tls_key = "`+certs.ClientKey+`"`)
	acc := gather(t, d)
	require.Len(t, acc.MetricsNamed("docker"), 2)
	require.Equal(t, []string{"healthy", "sick", "web"}, keys(f.byContainer(acc, "docker_container_status")))

	anonymous := f.newDocker(t, `endpoint = "tcp://`+relay.Addr()+`"
tls_ca = "`+certs.CA+`"`)
	err := anonymous.Gather(testutil.Context(t), &testutil.Accumulator{})
	require.ErrorContains(t, err, "docker engine at tcp://"+relay.Addr()+": ")
	require.ErrorContains(t, err, "certificate required")
}

// TestEndpointFromEnv: endpoint = "ENV" reads DOCKER_HOST, DOCKER_CERT_PATH and
// DOCKER_TLS_VERIFY as the Docker CLI does: here the real dockerd's socket, then the same
// daemon through mutual TLS with the certificates in DOCKER_CERT_PATH.
func TestEndpointFromEnv(t *testing.T) {
	gatherInfo := func() *testutil.Accumulator {
		d := New()
		testutil.Decode(t, `endpoint = "ENV"
container_name_include = ["no such container"]`, d)
		require.NoError(t, d.Init())
		acc := &testutil.Accumulator{}
		require.NoError(t, d.Gather(testutil.Context(t), acc))
		require.Len(t, acc.MetricsNamed("docker"), 2)
		return acc
	}
	t.Setenv("DOCKER_HOST", "unix:///var/run/docker.sock")
	gatherInfo()

	certs := testutil.NewCerts(t)
	dir := t.TempDir()
	for from, to := range map[string]string{certs.CA: "ca.pem", certs.ClientCert: "cert.pem", certs.ClientKey: "key.pem"} {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dir+"/"+to, b, 0o600))
	}
	relay := testserver.StartTCPRelay(t, "unix:/var/run/docker.sock", serverTLS(t, certs))
	t.Setenv("DOCKER_HOST", "tcp://"+relay.Addr())
	t.Setenv("DOCKER_CERT_PATH", dir)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	gatherInfo()
	require.Positive(t, relay.Accepted())
}

// serverTLS is a server's TLS config with certs' server certificate, requiring a client
// certificate that certs' CA signed, as dockerd --tlsverify does.
func serverTLS(t *testing.T, certs *testutil.Certs) *tls.Config {
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	require.NoError(t, err)
	pem, err := os.ReadFile(certs.CA)
	require.NoError(t, err)
	cas := x509.NewCertPool()
	require.True(t, cas.AppendCertsFromPEM(pem))
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: cas}
}

// TestUnreachable: a socket that does not exist, a port nobody listens on and a daemon that
// never answers each fail the gather with what happened and where.
func TestUnreachable(t *testing.T) {
	gatherErr := func(config string) error {
		d := New()
		testutil.Decode(t, config, d)
		require.NoError(t, d.Init())
		acc := &testutil.Accumulator{}
		err := d.Gather(testutil.Context(t), acc)
		require.Zero(t, acc.NMetrics())
		return err
	}
	sock := t.TempDir() + "/docker.sock"
	err := gatherErr(`endpoint = "unix://` + sock + `"`)
	require.ErrorContains(t, err, "docker engine at unix://"+sock+": ")
	require.ErrorContains(t, err, "no such file or directory")

	addr := testutil.FreeAddr(t)
	err = gatherErr(`endpoint = "tcp://` + addr + `"`)
	require.ErrorContains(t, err, "docker engine at tcp://"+addr+": ")
	require.ErrorContains(t, err, "connection refused")

	hole := testserver.SharedNginx(t).BlackholeAddr()
	start := time.Now()
	err = gatherErr(`endpoint = "tcp://` + hole + `"
timeout = "200ms"`)
	require.ErrorContains(t, err, "docker engine at tcp://"+hole+": timeout after 200ms: ")
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestUnreachableInsideTheAgent: an agent whose docker input cannot reach its daemon counts
// each failed gather in internal_gather, and its other input keeps its schedule.
func TestUnreachableInsideTheAgent(t *testing.T) {
	cfg, err := load(`
[agent]
  interval = "50ms"
  flush_interval = "50ms"
  omit_hostname = true
[[inputs.docker]]
  endpoint = "unix://` + t.TempDir() + `/docker.sock"
[[inputs.internal]]
`)
	require.NoError(t, err)
	out := &testutil.ScriptOutput{}
	cfg.AddOutput("sink", out)
	testserver.RunAgent(t, cfg)
	counted := func() (gathers, errs int64) {
		for _, m := range out.Metrics() {
			if m.Name() != "internal_gather" || tag(m, "input") != "docker" {
				continue
			}
			f := testutil.FieldsOf(m)
			gathers, errs = max(gathers, f["gather_errors"].(int64)), max(errs, f["errors"].(int64))
		}
		return
	}
	require.Eventually(t, func() bool { g, _ := counted(); return g >= 3 }, 10*time.Second, 10*time.Millisecond)
	g, e := counted()
	require.Equal(t, g, e, "one error per failed gather, not one per request")
}

// load loads a config as the agent does, from text.
func load(text string) (*config.Config, error) {
	return config.Load(config.Options{Sources: []config.Source{{Name: "morse.conf", Data: []byte(text)}},
		LookupEnv: func(string) (string, bool) { return "", false }})
}

// TestOptions: Telegraf's removed container_names and perdevice load as their
// replacements; what morse does not do is refused at load, every problem in one run.
func TestOptions(t *testing.T) {
	cfg, err := load(`
[[inputs.docker]]
  container_names = ["web"]
  container_name_include = ["db"]
[[inputs.docker]]
  perdevice = true
[[inputs.docker]]
  perdevice = true
  perdevice_include = ["blkio"]
`)
	require.NoError(t, err)
	docker := func(i int) *Docker { return cfg.Inputs[i].Plugin.(*Docker) }
	require.Equal(t, []string{"db", "web"}, docker(0).ContainerNameInclude)
	require.Equal(t, []string{"cpu"}, docker(0).PerDeviceInclude)
	require.Equal(t, []string{"cpu", "network", "blkio"}, docker(1).PerDeviceInclude)
	require.Equal(t, []string{"blkio", "network"}, docker(2).PerDeviceInclude)

	_, err = load(`
[[inputs.docker]]
  gather_services = true
  perdevice_include = ["cpu", "disk"]
  total_include = ["net"]
  storage_objects = ["image", "network"]
  container_name_include = ["[a-"]
  endpoint = "npipe:////./pipe/docker_engine"
`)
	require.Error(t, err)
	for _, want := range []string{
		"inputs.docker.gather_services: Swarm services are not supported",
		`inputs.docker.perdevice_include: invalid "disk"`,
		`inputs.docker.total_include: invalid "net"`,
		`inputs.docker.storage_objects: invalid storage object type "network"`,
		"inputs.docker.container_name_include: ",
		`inputs.docker.endpoint: endpoint "npipe:////./pipe/docker_engine": use unix:///path, tcp://host:port or ENV`,
	} {
		require.Contains(t, err.Error(), want)
	}
	require.Equal(t, 6, strings.Count(err.Error(), "inputs.docker."), err.Error())

	_, err = load("[[inputs.docker]]\n  total = true\n")
	require.ErrorContains(t, err, "total", "its meaning depended on total_include's; the operator chooses")
}

// TestDriverStatus reads the devicemapper sizes of a daemon's /info as Telegraf does; the
// test's daemon uses overlay2, whose DriverStatus holds no sizes. The entries are those of
// Telegraf's own test data (plugins/inputs/docker/testdata/info.json).
func TestDriverStatus(t *testing.T) {
	ms := driverStatusMetrics([][2]string{
		{"Pool Name", "docker-8:1-1182287-pool"}, {"Pool Blocksize", "65.54 kB"},
		{"Base Device Size", "10.74 GB"}, {"Backing Filesystem", "extfs"},
		{"Data file", "/dev/loop0"}, {"Metadata file", "/dev/loop1"},
		{"Data Space Used", "17.3 GB"}, {"Data Space Total", "107.4 GB"}, {"Data Space Available", "36.53 GB"},
		{"Metadata Space Used", "20.97 MB"}, {"Metadata Space Total", "2.147 GB"}, {"Metadata Space Available", "2.127 GB"},
		{"Thin Pool Minimum Free Space", "10.74GB"}, {"Udev Sync Supported", "true"},
	}, engineTags{host: "absol", version: "17.09.0-ce"}, time.Unix(0, 0))
	require.Equal(t, []string{
		"docker,engine_host=absol,server_version=17.09.0-ce,unit=bytes pool_blocksize=65540i 0",
		"docker_data,engine_host=absol,server_version=17.09.0-ce,unit=bytes used=17300000000i,total=107400000000i,available=36530000000i 0",
		"docker_metadata,engine_host=absol,server_version=17.09.0-ce,unit=bytes used=20970000i,total=2146999999i,available=2126999999i 0",
		"docker_devicemapper,engine_host=absol,pool_name=docker-8:1-1182287-pool,server_version=17.09.0-ce " +
			"pool_blocksize_bytes=65540i,base_device_size_bytes=10740000000i,data_space_used_bytes=17300000000i," +
			"data_space_total_bytes=107400000000i,data_space_available_bytes=36530000000i,metadata_space_used_bytes=20970000i," +
			"metadata_space_total_bytes=2146999999i,metadata_space_available_bytes=2126999999i,thin_pool_minimum_free_space_bytes=10740000000i 0",
	}, lines(ms))
}

func lines(ms []morse.Metric) []string {
	return strings.Split(strings.TrimSpace(testutil.Format(ms)), "\n")
}
