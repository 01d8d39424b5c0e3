package testserver

import (
	"errors"
	"fmt"
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

// PHP-FPM 8.2 comes from Debian bookworm's php8.2-fpm package, which
// scripts/ensure-php-fpm.sh unpacks into the user's cache. SharedPHPFPM runs it in the
// foreground without a php.ini (-F -n) with a generated config of two pools, both with
// pm.status_path = /status: "www" (static, two workers) on a free port of 127.0.0.1 and
// "sock" (static, one worker) on a unix socket in a temporary directory. In front of them it
// starts an nginx of its own (the harness's config, see nginx.go) whose servers also pass
// /fpm/www and /fpm/sock to the pools' status pages by FastCGI, and /fpm/down to a port
// where nothing listens.

// PHPFPMVersion is the PHP version the harness runs (Debian's security updates move its
// patch level).
const PHPFPMVersion = "8.2"

// PHPFPMPools are the harness's pools, each with its status page at PHPFPMStatusPath.
var PHPFPMPools = []string{"www", "sock"}

// PHPFPMStatusPath is the pools' pm.status_path.
const PHPFPMStatusPath = "/status"

// PHPFPM is a running php-fpm and the nginx in front of it.
type PHPFPM struct {
	// Addr is 127.0.0.1:PORT of the pool "www".
	Addr string
	// Socket is the path of the unix socket of the pool "sock".
	Socket string
	// Nginx serves /fpm/www, /fpm/sock (the pools' status pages, the query passed on) and
	// /fpm/down (a 502: its upstream is down) on its plain, TLS and unix-socket servers.
	Nginx *Nginx

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

var sharedPHPFPM struct {
	mu  sync.Mutex
	f   *PHPFPM
	err error
}

// SharedPHPFPM returns the test binary's php-fpm, starting it (and its nginx) on first use;
// StopSharedPHPFPM, from TestMain, ends both. It fails the test when either cannot start.
func SharedPHPFPM(t testing.TB) *PHPFPM {
	t.Helper()
	sharedPHPFPM.mu.Lock()
	defer sharedPHPFPM.mu.Unlock()
	if sharedPHPFPM.f == nil && sharedPHPFPM.err == nil {
		sharedPHPFPM.f, sharedPHPFPM.err = startPHPFPM()
	}
	require.NoError(t, sharedPHPFPM.err, "testserver: php-fpm did not start")
	return sharedPHPFPM.f
}

// StopSharedPHPFPM stops the shared php-fpm and its nginx, if they run.
func StopSharedPHPFPM() {
	sharedPHPFPM.mu.Lock()
	defer sharedPHPFPM.mu.Unlock()
	if sharedPHPFPM.f != nil {
		sharedPHPFPM.f.stop()
		sharedPHPFPM.f = nil
	}
}

func startPHPFPM() (*PHPFPM, error) {
	bin, err := cachedBinary("MORSE_PHP_FPM", "php-fpm", PHPFPMVersion, "php-fpm"+PHPFPMVersion, "scripts/ensure-php-fpm.sh")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "morse-php-fpm-")
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 { // another process may take a free port before php-fpm binds it
		ports, err := testutil.FreePorts("tcp", 2)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		f := &PHPFPM{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), Socket: filepath.Join(dir, "php-fpm.sock"),
			dir: dir, done: make(chan struct{})}
		if last = f.start(bin); last == nil {
			// The port where nothing listens, for /fpm/down, is the second free one.
			f.Nginx, last = startNginx(f.nginxLocations("127.0.0.1:" + strconv.Itoa(ports[1])))
			if last == nil {
				return f, nil
			}
			f.stop()
			return nil, fmt.Errorf("nginx for php-fpm: %w", last)
		}
		if !strings.Contains(last.Error(), "Address already in use") {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, last
}

func (f *PHPFPM) start(bin string) error {
	conf := filepath.Join(f.dir, "php-fpm.conf")
	logFile := filepath.Join(f.dir, "php-fpm.log")
	_ = os.Remove(logFile) // a failed attempt's "ready" must not count
	if err := os.WriteFile(conf, []byte(f.config(logFile)), 0o644); err != nil {
		return err
	}
	// -R lets the pools run as root, as the tests do in CI; php-fpm ignores it otherwise.
	f.cmd = exec.Command(bin, "-F", "-n", "-R", "-y", conf)
	f.cmd.SysProcAttr = familyAttr()
	if err := f.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { _ = f.cmd.Wait(); close(f.done) }()
	if err := f.waitReady(logFile, 30*time.Second); err != nil {
		f.stopProcess()
		log, _ := os.ReadFile(logFile)
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// waitReady waits for the master's "ready to handle connections", which it logs once it
// listens on both pools' addresses and has started their workers.
func (f *PHPFPM) waitReady(logFile string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(logFile); err == nil && strings.Contains(string(b), "ready to handle connections") {
			return nil
		}
		select {
		case <-f.done:
			return errors.New("php-fpm exited before it was ready")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("php-fpm was not ready on %s and %s within %s", f.Addr, f.Socket, timeout)
		}
	}
}

// stopProcess ends php-fpm: SIGTERM, on which the master stops its workers, then SIGKILL
// after ten seconds.
func (f *PHPFPM) stopProcess() {
	select {
	case <-f.done:
		return
	default:
	}
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		_ = f.cmd.Process.Kill()
		<-f.done
	}
}

func (f *PHPFPM) stop() {
	if f.Nginx != nil {
		f.Nginx.stop()
	}
	f.stopProcess()
	_ = os.RemoveAll(f.dir)
}

func (f *PHPFPM) config(logFile string) string {
	return strings.NewReplacer("{LOG}", logFile, "{DIR}", f.dir, "{ADDR}", f.Addr, "{SOCKET}", f.Socket,
		"{STATUS}", PHPFPMStatusPath).Replace(phpFPMConfig)
}

const phpFPMConfig = `[global]
pid = {DIR}/php-fpm.pid
error_log = {LOG}
daemonize = no
systemd_interval = 0

[www]
listen = {ADDR}
pm = static
pm.max_children = 2
pm.status_path = {STATUS}

[sock]
listen = {SOCKET}
pm = static
pm.max_children = 1
pm.status_path = {STATUS}
`

// nginxLocations pass /fpm/<pool> to the pool's status page, as a site's config would, and
// /fpm/down to down, where nothing listens.
func (f *PHPFPM) nginxLocations(down string) string {
	var b strings.Builder
	for _, l := range [][2]string{{"www", f.Addr}, {"sock", "unix:" + f.Socket}, {"down", down}} {
		fmt.Fprintf(&b, `    location = /fpm/%s {
      fastcgi_pass %s;
      fastcgi_param SCRIPT_NAME %s;
      fastcgi_param SCRIPT_FILENAME %s;
      fastcgi_param QUERY_STRING $query_string;
      fastcgi_param REQUEST_METHOD $request_method;
    }
`, l[0], l[1], PHPFPMStatusPath, PHPFPMStatusPath)
	}
	return b.String()
}
