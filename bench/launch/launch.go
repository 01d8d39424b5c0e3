// Package launch is the one process launcher of the benchmark harnesses in bench/: it starts
// the agent, the load tool and the sink as children, pinned to a CPU core where asked,
// waits on conditions they satisfy from outside, and stops them with the CPU time and peak
// RSS their whole life used.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a child a harness started. Whoever starts one stops it: every Start is paired
// with a Stop, which waits for the exit.
type Process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited and been waited for
	err    error         // the exit error, set before exited is closed
	log    *os.File      // the child's stderr
}

// Pinned returns the command line that runs argv on one CPU core, with taskset, which
// execs the program so that it keeps taskset's PID. A negative core, or no taskset, runs
// argv as it is.
func Pinned(core int, argv ...string) []string {
	if core < 0 {
		return argv
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return argv
	}
	return append([]string{"taskset", "-c", strconv.Itoa(core)}, argv...)
}

// Start starts argv with its stderr in a new file at logPath and its stdout in stdout (nil:
// in the log too). name is what errors call the process.
func Start(name, logPath string, stdout io.Writer, argv []string) (*Process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	if stdout == nil {
		stdout = log
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, exited: make(chan struct{}), log: log}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// LogPath is the file that holds the process's stderr.
func (p *Process) LogPath() string { return p.log.Name() }

// Stop sends SIGTERM, waits up to timeout for the exit, then kills the process. It returns
// the CPU time and peak RSS (KiB) the process used over its whole life, from wait4. An exit
// other than by SIGTERM or with status 0 is an error.
func (p *Process) Stop(timeout time.Duration) (cpu time.Duration, maxRSSKiB int64, err error) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
		err = fmt.Errorf("%s did not exit within %s of SIGTERM and was killed", p.name, timeout)
	}
	_ = p.log.Close()
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		maxRSSKiB = ru.Maxrss
	}
	if err == nil && p.err != nil && !isSIGTERM(p.err) {
		err = fmt.Errorf("%s: %w", p.name, p.err)
	}
	return cpu, maxRSSKiB, err
}

func isSIGTERM(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// WaitFor polls cond every 20 ms until it holds, the process exits, ctx ends or timeout
// passes. Polling is the only way to see a port open or a count settle in another process.
// The errors end with the last lines of the process's log.
func (p *Process) WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-p.exited:
			return fmt.Errorf("%s exited while waiting for %s: %v\n%s", p.name, what, p.err, Tail(p.log.Name(), 15))
		case <-deadline.C:
			return fmt.Errorf("%s: no %s within %s\n%s", p.name, what, timeout, Tail(p.log.Name(), 15))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Tail returns the last n lines of a file, for error messages.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
