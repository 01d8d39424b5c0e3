package testserver

// QuestDB 9.1.0 runs as a child process of the test, from the org.questdb:questdb jar on
// Maven Central and the machine's JDK (17 or later), with a data directory of its own under
// t.TempDir(). No container is needed: a JVM needs nothing from an image that the host does
// not already have. scripts/ensure-questdb.sh fetches the jar into the download cache; the
// harness runs the script itself when the jar is missing, so a test never skips.
//
// Every listener is bound to 127.0.0.1 on a port chosen free at start: HTTP (ILP /write,
// /exec SQL, the web console), the minimal HTTP health server, ILP over TCP, and PostgreSQL
// wire. ILP over UDP and telemetry are off. A restart keeps the data directory and the ports,
// so a client keeps its address across it, as it would with a real server being restarted.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

const (
	// QuestDBVersion is the QuestDB release the harness runs.
	QuestDBVersion = "9.1.0"
	// questdbJarSHA256 pins the jar that scripts/ensure-questdb.sh fetches.
	questdbJarSHA256 = "89d27871990db40b85716ffe0db0ad2a369b9e2169d985053bffb05167271682"
	questdbScript    = "scripts/ensure-questdb.sh"
	// questdbStopGrace is how long a stop waits for QuestDB to shut down by itself (it
	// commits what it holds) before the process group is killed.
	questdbStopGrace = 20 * time.Second
)

// QuestDBOptions configures one QuestDB server. The zero value gives a server with
// QuestDB's defaults except for the ports, the bind addresses, telemetry and a small heap.
type QuestDBOptions struct {
	// HTTPUser and HTTPPassword turn on HTTP basic authentication (http.user,
	// http.password) for /write and /exec. The harness's own queries send them.
	HTTPUser, HTTPPassword string
	// TCPAuthDB, when set, is written to a file that line.tcp.auth.db.path names: ILP over
	// TCP then requires the challenge-response login. Each line is
	// "KEY_ID ec-p-256-sha256 X Y" with X and Y the public key's base64url coordinates.
	TCPAuthDB string
	// Props adds or overrides server.conf properties; it wins over everything above.
	Props map[string]string
	// Heap is the JVM's -Xmx; "256m" if empty. QuestDB keeps its data off the heap.
	Heap string
	// StartupTimeout bounds a start until every listener answers; DefaultStartupTimeout
	// if 0.
	StartupTimeout time.Duration
}

// QuestDB is a running QuestDB server. It is stopped, and its process group killed, when the
// test that started it ends.
type QuestDB struct {
	opts  QuestDBOptions
	jar   string
	dir   string // the -d root: conf/, db/, and the server's output in questdb.log
	ports questdbPorts

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd's exit status, once done
}

type questdbPorts struct{ http, min, ilp, pg int }

// HTTPAddr is the HTTP server's address, 127.0.0.1:PORT: ILP over HTTP (/write), SQL
// (/exec) and InfluxDB's /ping.
func (q *QuestDB) HTTPAddr() string { return loopback(q.ports.http) }

// URL is the HTTP server's base URL, http://127.0.0.1:PORT.
func (q *QuestDB) URL() string { return "http://" + q.HTTPAddr() }

// ILPAddr is the address of ILP over TCP, 127.0.0.1:PORT.
func (q *QuestDB) ILPAddr() string { return loopback(q.ports.ilp) }

// PGAddr is the address of the PostgreSQL wire protocol, 127.0.0.1:PORT.
func (q *QuestDB) PGAddr() string { return loopback(q.ports.pg) }

// HealthAddr is the address of the minimal HTTP server that answers health checks.
func (q *QuestDB) HealthAddr() string { return loopback(q.ports.min) }

// Dir is the server's root directory (the -d argument).
func (q *QuestDB) Dir() string { return q.dir }

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// StartQuestDB starts a QuestDB server for the test and waits until all its listeners
// answer. It fails the test if the jar cannot be had or the server does not come up.
func StartQuestDB(t testing.TB, opts QuestDBOptions) *QuestDB {
	t.Helper()
	q := &QuestDB{opts: opts, jar: QuestDBJar(t), dir: t.TempDir()}
	require.NoError(t, os.MkdirAll(filepath.Join(q.dir, "conf"), 0o755))
	t.Cleanup(func() { q.Stop(t) })
	// A port found free may be taken again before the JVM binds it; then the server exits
	// at once and a second set of ports is tried.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = q.pickPorts(); err != nil {
			break
		}
		if err = q.start(); err == nil {
			return q
		}
		q.kill()
		if !strings.Contains(err.Error(), "exited") {
			break
		}
	}
	require.NoError(t, err, "testserver: QuestDB did not start\n%s", q.logTail(60))
	return q
}

// Restart stops the server gracefully and starts it again on the same ports and data.
func (q *QuestDB) Restart(t testing.TB) {
	t.Helper()
	q.Stop(t)
	q.Start(t)
}

// Start starts a stopped server again on the same ports and data.
func (q *QuestDB) Start(t testing.TB) {
	t.Helper()
	require.NoError(t, q.start(), "testserver: QuestDB did not start again\n%s", q.logTail(60))
}

// Stop shuts the server down: SIGTERM, so that it commits what it holds, then SIGKILL to
// its process group after a grace period. Stopping a stopped server does nothing.
func (q *QuestDB) Stop(t testing.TB) {
	t.Helper()
	q.mu.Lock()
	cmd, done := q.cmd, q.done
	q.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(questdbStopGrace):
		t.Logf("testserver: QuestDB ignored SIGTERM for %s; killing it", questdbStopGrace)
		q.kill()
	}
	q.mu.Lock()
	q.cmd = nil
	q.mu.Unlock()
}

// Kill ends the server at once with SIGKILL, as a crash would: what it had not committed
// is lost. Start brings it back.
func (q *QuestDB) Kill(t testing.TB) {
	t.Helper()
	q.kill()
}

func (q *QuestDB) kill() {
	q.mu.Lock()
	cmd, done := q.cmd, q.done
	q.cmd = nil
	q.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

func (q *QuestDB) pickPorts() error {
	ports, err := testutil.FreePorts("tcp", 4)
	if err != nil {
		return err
	}
	q.ports = questdbPorts{http: ports[0], min: ports[1], ilp: ports[2], pg: ports[3]}
	return nil
}

// serverConf is conf/server.conf: every listener on loopback, nothing sent home, and thread
// pools sized for a small machine shared with the test itself.
func (q *QuestDB) serverConf() (string, error) {
	props := map[string]string{
		"http.net.bind.to":             q.HTTPAddr(),
		"http.min.net.bind.to":         q.HealthAddr(),
		"line.tcp.net.bind.to":         q.ILPAddr(),
		"pg.net.bind.to":               q.PGAddr(),
		"line.udp.enabled":             "false",
		"telemetry.enabled":            "false",
		"telemetry.disable.completely": "true",
		"posthog.enabled":              "false",
		"shared.worker.count":          "2",
		"wal.apply.worker.count":       "1",
		"cairo.mat.view.enabled":       "false",
		"http.query.cache.enabled":     "false",
	}
	if q.opts.HTTPUser != "" {
		props["http.user"] = q.opts.HTTPUser
		props["http.password"] = q.opts.HTTPPassword
	}
	if q.opts.TCPAuthDB != "" {
		if err := os.WriteFile(filepath.Join(q.dir, "conf", "auth.txt"), []byte(q.opts.TCPAuthDB), 0o600); err != nil {
			return "", err
		}
		// QuestDB reads the path relative to the parent of its db directory, the root.
		props["line.tcp.auth.db.path"] = "conf/auth.txt"
	}
	maps.Copy(props, q.opts.Props)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String(), nil
}

// start launches the JVM in a process group of its own and waits for every listener.
func (q *QuestDB) start() error {
	conf, err := q.serverConf()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(q.dir, "conf", "server.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(q.dir, "questdb.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	heap := q.opts.Heap
	if heap == "" {
		heap = "256m"
	}
	cmd := exec.Command("java", "-Xms64m", "-Xmx"+heap, "-XX:+UseParallelGC",
		"-p", q.jar, "-m", "io.questdb/io.questdb.ServerMain", "-d", q.dir)
	cmd.Dir = q.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that a stop reaches every process the JVM starts; and
	// killed with the test binary, so that a test that dies leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testserver: start java: %w", err)
	}
	done := make(chan struct{})
	q.mu.Lock()
	q.cmd, q.done = cmd, done
	q.mu.Unlock()
	go func() {
		err := cmd.Wait()
		q.mu.Lock()
		q.err = err
		q.mu.Unlock()
		close(done)
	}()
	timeout := q.opts.StartupTimeout
	if timeout == 0 {
		timeout = DefaultStartupTimeout
	}
	return q.waitReady(done, timeout)
}

// waitReady polls until the HTTP server answers /ping and the other listeners accept, the
// process exits, or the timeout passes.
func (q *QuestDB) waitReady(done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = q.ready(); last == nil {
			return nil
		}
		select {
		case <-done:
			q.mu.Lock()
			err := q.err
			q.mu.Unlock()
			return fmt.Errorf("testserver: QuestDB exited during start (%v); last check: %w", err, last)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testserver: QuestDB not ready after %s: %w", timeout, last)
		}
	}
}

func (q *QuestDB) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.URL()+"/ping", nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("/ping answered %s", resp.Status)
	}
	for _, addr := range []string{q.ILPAddr(), q.PGAddr(), q.HealthAddr()} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

// logTail returns the last n lines the server printed.
func (q *QuestDB) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(q.dir, "questdb.log"))
	if err != nil {
		return "(no QuestDB log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LogContains reports whether the server's output holds s, for tests of what it logged.
func (q *QuestDB) LogContains(s string) bool {
	b, err := os.ReadFile(filepath.Join(q.dir, "questdb.log"))
	return err == nil && bytes.Contains(b, []byte(s))
}

var questdbJarMu sync.Mutex

// QuestDBJar returns the path of the cached QuestDB jar, running scripts/ensure-questdb.sh
// when it is missing or not the pinned file. It fails the test if the jar cannot be had.
func QuestDBJar(t testing.TB) string {
	t.Helper()
	questdbJarMu.Lock()
	defer questdbJarMu.Unlock()
	path, err := questdbJarPath()
	require.NoError(t, err)
	if err := checkSHA256(path, questdbJarSHA256); err == nil {
		return path
	}
	root, err := moduleRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, questdbScript))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "testserver: %s failed:\n%s", questdbScript, stderr.String())
	got := strings.TrimSpace(string(out))
	require.Equal(t, path, got, "testserver: %s put the jar elsewhere", questdbScript)
	require.NoError(t, checkSHA256(path, questdbJarSHA256))
	return path
}

// questdbJarPath is where scripts/ensure-questdb.sh caches the jar.
func questdbJarPath() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("testserver: no cache directory: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "morse", "questdb", QuestDBVersion, "questdb-"+QuestDBVersion+".jar"), nil
}

func checkSHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return errors.New("testserver: " + path + " has sha256 " + got + ", want " + want)
	}
	return nil
}
