package testserver

// Apache Kafka, one node in KRaft mode (broker and controller in one JVM), run as a child
// process of the test on the machine's JDK (17 or newer). No container: the broker is a
// plain Java program, and a child process keeps its ports across a restart, which the
// broker-restart tests need.
//
// The jars (kafka_2.13 and its runtime dependencies, see testdata/containers/kafka/pom.xml)
// are cached outside the repository by scripts/ensure-kafka.sh, which StartKafka runs when
// they are missing. A start formats a fresh data directory with Kafka's StorageTool (a
// short JVM run), then starts kafka.Kafka and waits for "Kafka Server started" in its log.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/morse-agent/morse/internal/testutil"
)

// KafkaAdmin is the user that is a super user when KafkaOptions.Authorizer is set; give it
// in Users to log in as it over SASL.
const KafkaAdmin = "admin"

// kafkaMain is the broker's main class.
const kafkaMain = "kafka.Kafka"

// kafkaStopTimeout bounds a graceful stop before the broker is killed.
const kafkaStopTimeout = 30 * time.Second

// KafkaUser is a SASL user. Each one can log in with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
type KafkaUser struct {
	Name     string
	Password string
}

// KafkaOptions configures one broker. The zero value is a plain broker on one loopback
// port that creates topics on first use with one partition.
type KafkaOptions struct {
	// Partitions is num.partitions, the partition count of auto-created topics (default 1).
	Partitions int
	// NoAutoCreateTopics turns auto.create.topics.enable off.
	NoAutoCreateTopics bool
	// Users adds a SASL_PLAINTEXT listener (and SASL_SSL with TLS) that accepts them.
	Users []KafkaUser
	// TLS adds an SSL listener (and SASL_SSL with Users) with a certificate for 127.0.0.1
	// signed by a CA made for this broker; see CAFile.
	TLS bool
	// TLSClientAuth is the SSL listener's ssl.client.auth: "none" (default), "requested" or
	// "required". ClientCertFile and ClientKeyFile hold a certificate the broker accepts.
	TLSClientAuth string
	// Authorizer turns on KRaft's StandardAuthorizer. Only KafkaAdmin, the PLAINTEXT
	// listener (user ANONYMOUS) and the holder of ClientCertFile may do anything until ACLs
	// say otherwise.
	Authorizer bool
	// Props adds or overrides server.properties entries.
	Props map[string]string
	// StartupTimeout bounds each start until the broker is ready; default 90 s.
	StartupTimeout time.Duration
	// FullJIT runs the broker with both JIT compilers, for benchmarks. By default it runs
	// with C1 alone, which starts it on about half the CPU and is fast enough for tests.
	FullJIT bool
}

// Kafka is a running broker. It is killed when the test that started it ends.
type Kafka struct {
	opts  KafkaOptions
	dir   string
	jars  string
	addrs map[string]string // listener name → 127.0.0.1:port, fixed for the broker's life
	log   *os.File
	certs *testutil.Certs // the TLS files; nil unless KafkaOptions.TLS
	// cds is the class-data archive (see kafka_cds.go); cdsTmp the one this broker writes
	// at a clean exit when cds does not exist yet. Both are used under mu.
	cds    string
	cdsTmp string

	adminMu sync.Mutex
	admin   *kadm.Client

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited and its output is drained

	// Startup is how long the last start took, from launching the JVM to ready; the first
	// start's includes formatting the data directory, and Fetched tells whether it also
	// had to download the jars.
	Startup time.Duration
	// Fetched is true when StartKafka ran scripts/ensure-kafka.sh to download the jars.
	Fetched bool
}

// StartKafka starts a broker on free loopback ports and waits until it serves.
func StartKafka(t testing.TB, opts KafkaOptions) *Kafka {
	t.Helper()
	require.NoError(t, opts.validate())
	began := time.Now()
	jars, fetched, err := kafkaJars()
	require.NoError(t, err)
	if _, err := exec.LookPath("java"); err != nil {
		require.FailNow(t, "testserver: no java on PATH; run scripts/ensure-kafka.sh", err)
	}
	k := &Kafka{opts: opts, dir: t.TempDir(), jars: jars, addrs: map[string]string{}, Fetched: fetched}
	if k.cds, err = cdsArchive(jars); err != nil {
		t.Logf("testserver: kafka starts without class-data sharing: %v", err)
	}
	names := opts.listenerNames()
	ports, err := testutil.FreePorts("tcp", len(names))
	require.NoError(t, err)
	for i, name := range names {
		k.addrs[name] = fmt.Sprintf("127.0.0.1:%d", ports[i])
	}
	if opts.TLS {
		require.NoError(t, k.writeTLS())
	}
	require.NoError(t, os.WriteFile(k.path("server.properties"), []byte(k.serverProperties()), 0o600))
	require.NoError(t, os.WriteFile(k.path("log4j2.properties"), []byte(log4jConfig), 0o600))
	k.log, err = os.Create(k.path("kafka.log"))
	require.NoError(t, err)
	t.Cleanup(func() {
		k.closeAdmin()
		if k.writesArchive() {
			k.Stop(t) // a clean exit writes the class-data archive
		}
		k.Kill(t)
		if t.Failed() {
			k.logTail(t, 40)
		}
		_ = k.log.Close()
	})
	k.format(t)
	k.start(t)
	k.Startup = time.Since(began)
	return k
}

func (k *Kafka) path(name string) string { return filepath.Join(k.dir, name) }

// Addr is the PLAINTEXT listener, 127.0.0.1:PORT: no authentication, and a super user's
// rights under KafkaOptions.Authorizer.
func (k *Kafka) Addr() string { return k.addrs[lnPlain] }

// SASLAddr is the SASL_PLAINTEXT listener; empty without KafkaOptions.Users.
func (k *Kafka) SASLAddr() string { return k.addrs[lnSASL] }

// TLSAddr is the SSL listener; empty without KafkaOptions.TLS.
func (k *Kafka) TLSAddr() string { return k.addrs[lnSSL] }

// SASLTLSAddr is the SASL_SSL listener; empty unless both Users and TLS are set.
func (k *Kafka) SASLTLSAddr() string { return k.addrs[lnSASLSSL] }

// LogPath is the file that collects the broker's output over all its starts.
func (k *Kafka) LogPath() string { return k.log.Name() }

// jvm runs a Kafka main class with the broker's heap limits: 512 MiB and the serial
// collector keep one broker near 300 MB resident, which several tests side by side afford.
func (k *Kafka) jvm(ctx context.Context, extra []string, class string, args ...string) *exec.Cmd {
	argv := []string{"-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true", "-XX:+ExitOnOutOfMemoryError"}
	argv = append(argv, extra...)
	if !k.opts.FullJIT || class != kafkaMain {
		argv = append(argv, "-XX:TieredStopAtLevel=1")
	}
	argv = append(argv, "-cp", filepath.Join(k.jars, "*"), class)
	cmd := exec.CommandContext(ctx, "java", append(argv, args...)...)
	cmd.Dir = k.dir
	// Its own process group, so that a terminal's ^C reaches only the test, which then
	// stops the broker; and killed with the test process should that die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// format writes a new cluster's metadata into the data directory, with the SCRAM users.
func (k *Kafka) format(t testing.TB) {
	t.Helper()
	id, err := newClusterID()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), k.startupTimeout())
	defer cancel()
	// WARN keeps the tool from printing the whole config.
	quiet := k.path("log4j2-quiet.properties")
	require.NoError(t, os.WriteFile(quiet, []byte("status = warn\nrootLogger.level = warn\n"), 0o600))
	args := append([]string{"format", "-t", id, "-c", k.path("server.properties")}, k.opts.scramArgs()...)
	k.mu.Lock()
	flags := append(k.cdsFlags(false), "-Dlog4j2.configurationFile="+quiet)
	k.mu.Unlock()
	cmd := k.jvm(ctx, flags, "kafka.tools.StorageTool", args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "kafka StorageTool format:\n%s", out)
}

func (k *Kafka) startupTimeout() time.Duration {
	if k.opts.StartupTimeout > 0 {
		return k.opts.StartupTimeout
	}
	return 90 * time.Second
}

// start launches kafka.Kafka and waits for its "Kafka Server started" line.
func (k *Kafka) start(t testing.TB) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	require.Nil(t, k.cmd, "testserver: kafka is already running")
	began := time.Now()
	flags := append(k.cdsFlags(true), "-Dlog4j2.configurationFile="+k.path("log4j2.properties"))
	cmd := k.jvm(context.Background(), flags, kafkaMain, k.path("server.properties"))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	_ = w.Close() // the child holds its own copy; EOF on r then means it exited
	if err != nil {
		_ = r.Close()
		require.NoError(t, err, "start kafka")
	}
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.copyLog(r, ready)
		_ = r.Close()
		_ = cmd.Wait()
	}()
	k.cmd, k.done = cmd, done
	select {
	case <-ready:
	case <-done:
		k.cmd = nil
		k.logTail(t, 60)
		require.FailNow(t, "testserver: kafka exited before it was ready", "%v", cmd.ProcessState)
	case <-time.After(k.startupTimeout()):
		k.killLocked()
		k.logTail(t, 60)
		require.FailNow(t, "testserver: kafka not ready in time", "%s", k.startupTimeout())
	}
	// The line is logged once the listeners accept; a dial makes sure of it.
	for _, addr := range k.addrs {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err, "kafka listener %s", addr)
		_ = c.Close()
	}
	k.Startup = time.Since(began)
}

// copyLog appends the broker's output to the log file and closes ready at the line that says
// the broker serves.
func (k *Kafka) copyLog(r io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		_, _ = k.log.WriteString(line + "\n")
		if !signalled && strings.Contains(line, "Kafka Server started") {
			signalled = true
			close(ready)
		}
	}
	// A line too long for the scanner would stop it; drain the rest so that the broker
	// never blocks on a full pipe.
	_, _ = io.Copy(k.log, r)
}

// Stop shuts the broker down cleanly (SIGTERM, as kafka-server-stop.sh does) and waits for
// it to exit, killing it after 30 s. Its ports and data stay for Restart.
func (k *Kafka) Stop(t testing.TB) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return
	}
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-k.done:
		k.cmd = nil
		k.finishArchive(true)
	case <-time.After(kafkaStopTimeout):
		k.killLocked()
		require.FailNow(t, "testserver: kafka did not stop within 30 s of SIGTERM; killed")
	}
}

// Kill ends the broker at once with SIGKILL, as a crash would, and waits for it to be gone.
// Records the broker acknowledged survive: they are in the page cache, not lost with the
// process.
func (k *Kafka) Kill(t testing.TB) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killLocked()
}

func (k *Kafka) killLocked() {
	if k.cmd == nil {
		return
	}
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
	<-k.done
	k.cmd = nil
	k.finishArchive(false)
}

// writesArchive reports whether the running broker will write the class-data archive when
// it exits cleanly.
func (k *Kafka) writesArchive() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cmd != nil && k.cdsTmp != ""
}

// Restart starts a stopped broker again on the same ports with the same data, and waits
// until it serves.
func (k *Kafka) Restart(t testing.TB) {
	t.Helper()
	k.start(t)
}

// Running reports whether the broker process is up.
func (k *Kafka) Running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cmd != nil
}

// logTail writes the last n lines of the broker's log to the test log.
func (k *Kafka) logTail(t testing.TB, n int) {
	t.Helper()
	b, err := os.ReadFile(k.log.Name())
	if err != nil {
		t.Logf("kafka log: %v", err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	t.Logf("---- last %d lines of the kafka log (%s) ----\n%s", n, k.log.Name(),
		strings.Join(lines[max(0, len(lines)-n):], "\n"))
}
