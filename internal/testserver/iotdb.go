package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/morse-agent/morse/internal/testutil"
)

// IoTDB's REST port inside the container, and the credentials of a fresh server.
const (
	iotdbRESTPort = "18080/tcp"
	// IoTDBUser and IoTDBPassword are a fresh server's administrator.
	IoTDBUser     = "root"
	IoTDBPassword = "root"
)

// IoTDBOptions configures one IoTDB container. The zero value is a fresh server with the
// settings of testdata/containers/iotdb/iotdb-system.properties.
type IoTDBOptions struct {
	// StartupTimeout bounds each start until REST answers; default 90 s (two JVMs on a
	// busy machine).
	StartupTimeout time.Duration
}

func (o IoTDBOptions) timeout() time.Duration {
	if o.StartupTimeout > 0 {
		return o.StartupTimeout
	}
	return 90 * time.Second
}

// IoTDB is a running Apache IoTDB 2.0.1-beta, a ConfigNode and a DataNode in a container
// built FROM scratch out of the host's JDK and the jars of scripts/ensure-iotdb.sh. IoTDB
// binds every interface whatever its settings say, so it runs in a network namespace of its
// own, and only its REST port is published, on a port of 127.0.0.1 fixed for its life, so
// that URL stays the same across Stop and Start.
type IoTDB struct {
	opts IoTDBOptions
	ctr  testcontainers.Container
	port int

	mu     sync.Mutex
	paused bool

	// Startup is how long the last start took, until REST answered.
	Startup time.Duration
}

// URL is the REST service's base URL, http://127.0.0.1:PORT.
func (s *IoTDB) URL() string { return "http://" + s.Addr() }

// Addr is 127.0.0.1:PORT, the published REST port.
func (s *IoTDB) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// StartIoTDB starts a server for one test and removes it when the test ends.
func StartIoTDB(t testing.TB, opts IoTDBOptions) *IoTDB {
	t.Helper()
	s, err := startIoTDB(opts, t.Logf)
	if s != nil {
		t.Cleanup(func() {
			if t.Failed() {
				s.logTail(t)
			}
			s.terminate(t.Logf)
		})
	}
	require.NoError(t, err, "testserver: IoTDB did not start")
	return s
}

var sharedIoTDB struct {
	mu  sync.Mutex
	srv *IoTDB
	err error
}

// SharedIoTDB returns the one server of this test process, started on first use, so that a
// package's tests pay IoTDB's start once. Tests that share it use names of their own (a
// database or device per test) and must not run in parallel with one that stops or pauses
// it. The package's TestMain calls StopSharedIoTDB after m.Run.
func SharedIoTDB(t testing.TB) *IoTDB {
	t.Helper()
	sharedIoTDB.mu.Lock()
	defer sharedIoTDB.mu.Unlock()
	if sharedIoTDB.srv == nil && sharedIoTDB.err == nil {
		sharedIoTDB.srv, sharedIoTDB.err = startIoTDB(IoTDBOptions{}, t.Logf)
		if sharedIoTDB.err != nil && sharedIoTDB.srv != nil {
			sharedIoTDB.srv.logTail(t)
		}
	}
	require.NoError(t, sharedIoTDB.err, "testserver: IoTDB did not start")
	t.Cleanup(func() {
		if t.Failed() {
			sharedIoTDB.srv.logTail(t)
		}
		sharedIoTDB.srv.unpauseQuietly() // a test that failed while the server was paused
	})
	return sharedIoTDB.srv
}

// LaunchIoTDB starts a server for a program that is not a test, the benchmark harness
// (bench/e2e): logf hears of its start. Close removes it.
func LaunchIoTDB(opts IoTDBOptions, logf func(string, ...any)) (*IoTDB, error) {
	s, err := startIoTDB(opts, logf)
	if err != nil && s != nil {
		s.terminate(logf)
		return nil, err
	}
	return s, err
}

// Close removes a server that LaunchIoTDB started.
func (s *IoTDB) Close() { s.terminate(func(string, ...any) {}) }

// StopSharedIoTDB removes the server of SharedIoTDB, if one was started.
func StopSharedIoTDB() {
	sharedIoTDB.mu.Lock()
	defer sharedIoTDB.mu.Unlock()
	if sharedIoTDB.srv != nil {
		sharedIoTDB.srv.terminate(func(string, ...any) {})
		sharedIoTDB.srv = nil
	}
}

func startIoTDB(opts IoTDBOptions, logf func(string, ...any)) (*IoTDB, error) {
	setupEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a first build copies ~250 MB
	defer cancel()
	cli, err := newDockerClient(ctx)
	if err != nil {
		return nil, err
	}
	ref, err := iotdbImage(ctx, cli)
	if err != nil {
		return nil, fmt.Errorf("IoTDB test image: %w", err)
	}
	ports, err := testutil.FreePorts("tcp", 1)
	if err != nil {
		return nil, err
	}
	s := &IoTDB{opts: opts, port: ports[0]}
	port := network.MustParsePort(iotdbRESTPort)
	began := time.Now()
	s.ctr, err = testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        ref,
			ExposedPorts: []string{iotdbRESTPort},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{port: {{
					HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(s.port),
				}}}
			},
		},
		Started: true,
		Logger:  tclog.NewNoopLogger(),
	})
	if err != nil {
		if s.ctr == nil {
			return nil, fmt.Errorf("start IoTDB container: %w", err)
		}
		return s, fmt.Errorf("start IoTDB container: %w", err)
	}
	if err := s.waitReady(); err != nil {
		return s, err
	}
	s.Startup = time.Since(began)
	logf("testserver: IoTDB at %s ready in %s", s.URL(), s.Startup.Round(time.Millisecond))
	return s, nil
}

// newDockerClient is dockerClient without a test: SharedIoTDB may outlive the test that
// started it.
func newDockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	docker.once.Do(func() {
		docker.cli, docker.err = testcontainers.NewDockerClientWithOpts(ctx)
		if docker.err == nil {
			_, docker.err = docker.cli.Ping(ctx, client.PingOptions{})
		}
	})
	if docker.err != nil {
		return nil, fmt.Errorf("no Docker daemon answers (run scripts/ensure-docker.sh as root; `make test` does): %w", docker.err)
	}
	return docker.cli, nil
}

// waitReady polls IoTDB until both nodes say they are running (show cluster): the REST
// service answers before the DataNode has registered with the ConfigNode.
func (s *IoTDB) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.timeout())
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if st, err := s.ctr.State(ctx); err == nil && !st.Running {
			return fmt.Errorf("IoTDB container exited (status %d)", st.ExitCode)
		}
		if last = s.ping(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("IoTDB not ready within %s: %w", s.opts.timeout(), last)
		case <-tick.C:
		}
	}
}

func (s *IoTDB) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second) // a node still starting may hold a request
	defer cancel()
	var r IoTDBResult
	if err := s.post(ctx, "/rest/v2/query", `{"sql":"show cluster"}`, &r); err != nil {
		return err
	}
	if r.Code != 0 {
		return fmt.Errorf("show cluster: %d %s", r.Code, r.Message)
	}
	for _, status := range r.column("Status") {
		if status != "Running" {
			return fmt.Errorf("show cluster: a node is %v", status)
		}
	}
	return nil
}

// IoTDBStatus is IoTDB's answer to a write or a statement: its status code and message.
type IoTDBStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// IoTDBResult is the answer to a query of REST v2: one array per expression (column).
type IoTDBResult struct {
	Expressions []string `json:"expressions"`
	ColumnNames []string `json:"column_names"`
	DataTypes   []string `json:"data_types"`
	Timestamps  []int64  `json:"timestamps"`
	Values      [][]any  `json:"values"`
	IoTDBStatus
}

// column is the values of the column named name, or nil.
func (r IoTDBResult) column(name string) []any {
	for i, n := range r.ColumnNames {
		if n == name && i < len(r.Values) {
			return r.Values[i]
		}
	}
	return nil
}

// Query runs sql through POST /rest/v2/query and fails the test unless IoTDB answers with
// a result. Numbers come as json.Number, so integers keep every digit.
func (s *IoTDB) Query(t testing.TB, sql string) IoTDBResult {
	t.Helper()
	var r IoTDBResult
	require.NoError(t, s.post(testutil.Context(t), "/rest/v2/query", sqlBody(sql), &r))
	require.Zero(t, r.Code, "query %q: %s", sql, r.Message)
	return r
}

// NonQuery runs sql through POST /rest/v2/nonQuery and fails the test unless it succeeds.
func (s *IoTDB) NonQuery(t testing.TB, sql string) {
	t.Helper()
	var st IoTDBStatus
	require.NoError(t, s.post(testutil.Context(t), "/rest/v2/nonQuery", sqlBody(sql), &st))
	require.Equal(t, 200, st.Code, "%q: %s", sql, st.Message)
}

func sqlBody(sql string) string {
	b, _ := json.Marshal(map[string]string{"sql": sql})
	return string(b)
}

func (s *IoTDB) post(ctx context.Context, path, body string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth(IoTDBUser, IoTDBPassword)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("%s: %d: %w", path, resp.StatusCode, err)
	}
	return nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s) and keeps its data: Start
// starts it again at the same URL with what it had stored.
func (s *IoTDB) Stop(t testing.TB) {
	t.Helper()
	s.unpauseQuietly()
	timeout := 10 * time.Second
	require.NoError(t, s.ctr.Stop(testutil.Context(t), &timeout), "testserver: stop IoTDB")
}

// Start starts a stopped server again and waits until it is ready.
func (s *IoTDB) Start(t testing.TB) {
	t.Helper()
	began := time.Now()
	require.NoError(t, s.ctr.Start(testutil.Context(t)), "testserver: start IoTDB")
	require.NoError(t, s.waitReady())
	s.Startup = time.Since(began)
}

// Pause freezes both nodes (docker pause, the cgroup freezer: as SIGSTOP to every process):
// connections to URL are still accepted by the port's proxy, and nothing answers.
func (s *IoTDB) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cli, err := newDockerClient(testutil.Context(t))
	require.NoError(t, err)
	_, err = cli.ContainerPause(testutil.Context(t), s.ctr.GetContainerID(), client.ContainerPauseOptions{})
	require.NoError(t, err, "testserver: docker pause")
	s.paused = true
}

// Unpause resumes a paused server.
func (s *IoTDB) Unpause(t testing.TB) {
	t.Helper()
	require.NoError(t, s.unpause())
}

func (s *IoTDB) unpause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.paused {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := newDockerClient(ctx)
	if err == nil {
		_, err = cli.ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	}
	if err == nil {
		s.paused = false
	}
	return err
}

func (s *IoTDB) unpauseQuietly() { _ = s.unpause() }

// terminate removes the container.
func (s *IoTDB) terminate(logf func(string, ...any)) {
	s.unpauseQuietly()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ctr.Terminate(ctx, testcontainers.StopTimeout(2*time.Second)); err != nil {
		logf("testserver: terminate IoTDB container: %v", err)
	}
}

// logTail logs the end of the nodes' output (warnings and errors, see logback.xml).
func (s *IoTDB) logTail(t testing.TB) {
	if s == nil || s.ctr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := s.ctr.Logs(ctx)
	if err != nil {
		t.Logf("testserver: IoTDB logs: %v", err)
		return
	}
	defer rc.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(rc)
	b := buf.Bytes()
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	t.Logf("testserver: the end of the IoTDB log:\n%s", b)
}
