package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
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

// Mosquitto comes from Debian's mosquitto package (scripts/ensure-mosquitto.sh). The
// harness runs the broker as a child process with a config of its own, never the package's
// service: three listeners on free ports of 127.0.0.1, persistence in the test's temporary
// directory (saved on SIGTERM, so that Restart keeps sessions and queued messages), and on
// Linux the kernel kills it if the test process dies first.
//
// The listeners (per_listener_settings):
//   - Addr: plain TCP, anonymous clients allowed;
//   - AuthAddr: plain TCP, only User with Password (a password file made with
//     mosquitto_passwd);
//   - TLSAddr: TLS with the server certificate of Certs (testutil.Certs), anonymous clients
//     allowed, no client certificate asked for.

// MosquittoUser and MosquittoPassword are the one account of AuthAddr.
const (
	MosquittoUser     = "morse"
	MosquittoPassword = "s3cret-morse"
)

// Mosquitto is a running broker, stopped when the test that started it ends.
type Mosquitto struct {
	Addr, AuthAddr, TLSAddr string
	Certs                   *testutil.Certs

	bin, conf, log string
	cmd            *exec.Cmd
	done           chan struct{}
}

// MosquittoBinary returns the broker's path: $MORSE_MOSQUITTO, or Debian's /usr/sbin/mosquitto.
func MosquittoBinary() (string, error) {
	if p := os.Getenv("MORSE_MOSQUITTO"); p != "" {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/bin/mosquitto"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no mosquitto: run scripts/ensure-mosquitto.sh (make test-deps) to install Debian's mosquitto")
}

// StartMosquitto starts a broker of the test's own, for a test that stops or restarts it.
func StartMosquitto(t testing.TB) *Mosquitto {
	t.Helper()
	m, err := startMosquitto(t.TempDir())
	require.NoError(t, err, "testserver: mosquitto did not start")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testserver: last lines of mosquitto's log:\n%s", m.logTail(40))
		}
		m.stop()
	})
	return m
}

var sharedMosquitto struct {
	mu  sync.Mutex
	srv *Mosquitto
	dir string
	err error
}

// SharedMosquitto returns the one broker of this test process, started on first use. Tests
// that share it use topics and client ids of their own, and never stop it. The package's
// TestMain calls StopSharedMosquitto after m.Run.
func SharedMosquitto(t testing.TB) *Mosquitto {
	t.Helper()
	s := &sharedMosquitto
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil && s.err == nil {
		if s.dir, s.err = os.MkdirTemp("", "morse-mosquitto-"); s.err == nil {
			s.srv, s.err = startMosquitto(s.dir)
		}
	}
	require.NoError(t, s.err, "testserver: mosquitto did not start")
	srv := s.srv
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testserver: last lines of mosquitto's log:\n%s", srv.logTail(40))
		}
	})
	return srv
}

// StopSharedMosquitto stops the broker of SharedMosquitto, if one was started.
func StopSharedMosquitto() {
	s := &sharedMosquitto
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.stop()
		_ = os.RemoveAll(s.dir)
		s.srv = nil
	}
}

func startMosquitto(dir string) (*Mosquitto, error) {
	bin, err := MosquittoBinary()
	if err != nil {
		return nil, err
	}
	certs, err := testutil.WriteCerts(dir, "morse test client")
	if err != nil {
		return nil, err
	}
	pw := filepath.Join(dir, "passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", "-c", pw, MosquittoUser, MosquittoPassword).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mosquitto_passwd: %w: %s", err, out)
	}
	// The port found free is bound by the child: another process may take it meanwhile.
	for attempt := 1; ; attempt++ {
		m, err := tryMosquitto(bin, dir, pw, certs)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			return m, err
		}
	}
}

func tryMosquitto(bin, dir, pw string, certs *testutil.Certs) (*Mosquitto, error) {
	ports, err := testutil.FreePorts("tcp", 3)
	if err != nil {
		return nil, err
	}
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	m := &Mosquitto{
		Addr: addr(ports[0]), AuthAddr: addr(ports[1]), TLSAddr: addr(ports[2]), Certs: certs, bin: bin,
		conf: filepath.Join(dir, "mosquitto.conf"), log: filepath.Join(dir, "mosquitto.log"),
	}
	runAs := "mosquitto"
	if u, err := user.Current(); err == nil {
		runAs = u.Username // as root, mosquitto would switch to a user who cannot read dir
	}
	conf := fmt.Sprintf(`# written by internal/testserver
per_listener_settings true
user %s
persistence true
persistence_location %s/
log_dest file %s
log_type error
log_type warning
log_type notice
log_type information
connection_messages true
max_queued_messages 100000

listener %d 127.0.0.1
allow_anonymous true

listener %d 127.0.0.1
allow_anonymous false
password_file %s

listener %d 127.0.0.1
allow_anonymous true
cafile %s
certfile %s
keyfile %s
`, runAs, dir, m.log, ports[0], ports[1], pw, ports[2], certs.CA, certs.ServerCert, certs.ServerKey)
	if err := os.WriteFile(m.conf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	if err := m.start(); err != nil {
		m.stop()
		return nil, fmt.Errorf("%w\n%s", err, m.logTail(20))
	}
	return m, nil
}

// start runs the broker and waits until every listener accepts connections.
func (m *Mosquitto) start() error {
	cmd := exec.Command(m.bin, "-c", m.conf)
	out, err := os.OpenFile(m.log+".out", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.bin, err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(m.done)
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range []string{m.Addr, m.AuthAddr, m.TLSAddr} {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-m.done:
				return fmt.Errorf("mosquitto exited before listening on %s", a)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("mosquitto did not listen on %s within 10s", a)
			}
		}
	}
	return nil
}

// Stop stops the broker as an administrator would (SIGTERM): it saves its sessions and the
// messages it holds first. Start brings it back.
func (m *Mosquitto) Stop(t testing.TB) {
	t.Helper()
	m.stop()
}

// Start starts a stopped broker again on the same ports with its saved state.
func (m *Mosquitto) Start(t testing.TB) {
	t.Helper()
	require.NoError(t, m.start(), "testserver: mosquitto did not start again\n%s", m.logTail(20))
}

func (m *Mosquitto) stop() {
	if m.cmd == nil {
		return
	}
	select {
	case <-m.done:
	default:
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	}
}

// Log returns the broker's log so far, for tests that check what it said about a client.
func (m *Mosquitto) Log() string {
	b, _ := os.ReadFile(m.log)
	return string(b)
}

func (m *Mosquitto) logTail(n int) string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		return err.Error()
	}
	b2, _ := os.ReadFile(m.log + ".out")
	lines := strings.Split(strings.TrimRight(string(b)+string(b2), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
