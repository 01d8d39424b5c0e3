package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// dbProc is a database server run as a child process by the launchers of MariaDB,
// PostgreSQL and Redis (mariadb.go, postgres.go, redis.go): its output goes to a log file
// in its directory, and the kernel kills it if the test process dies first.
type dbProc struct {
	name string
	dir  string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startDBProc starts bin with args in dir, as cred when it is not nil, and waits until
// every address in addrs accepts TCP connections.
func startDBProc(name, dir string, cred *syscall.Credential, addrs []string, bin string, args ...string) (*dbProc, error) {
	p := &dbProc{name: name, dir: dir, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = childAttr()
	p.cmd.SysProcAttr.Credential = cred
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	if err := p.waitListening(addrs, 60*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w\n%s", err, p.logTail(30))
	}
	return p, nil
}

func (p *dbProc) waitListening(addrs []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, a := range addrs {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				_ = c.Close()
				break
			}
			select {
			case <-p.done:
				return fmt.Errorf("%s exited before listening on %s", p.name, a)
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not listen on %s within %s", p.name, a, timeout)
			}
		}
	}
	return nil
}

// stop ends the server with SIGTERM (a clean shutdown), then SIGKILL after 10s.
func (p *dbProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *dbProc) logTail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// retryPorts runs try up to three times while the error says that another process took the
// port found free meanwhile.
func retryPorts[T any](try func() (T, error), inUse ...string) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := try()
		if err == nil || attempt == 3 {
			return v, err
		}
		busy := false
		for _, s := range inUse {
			busy = busy || strings.Contains(err.Error(), s)
		}
		if !busy {
			return v, err
		}
	}
}

// lookBinary is the first of paths that exists, or an error naming the script that
// installs it.
func lookBinary(script string, paths ...string) (string, error) {
	for _, p := range paths {
		if matches, _ := filepath.Glob(p); len(matches) > 0 {
			return matches[len(matches)-1], nil
		}
	}
	return "", errors.New("no " + filepath.Base(paths[0]) + ": run " + script + " (make test-deps)")
}
