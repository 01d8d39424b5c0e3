package main

import (
	"bufio"
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

// process is a child the harness started: the agent or the sink. Whoever starts one stops
// it: every start is paired with a stop, which waits for the exit.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited and been waited for
	err    error         // the exit error, set before exited is closed
	log    *os.File      // the child's stderr
}

// pinned returns the command line that runs argv on one CPU core, with taskset, which
// execs the program so that it keeps taskset's PID. A negative core, or no taskset, runs
// argv as it is.
func pinned(core int, argv ...string) []string {
	if core < 0 {
		return argv
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return argv
	}
	return append([]string{"taskset", "-c", strconv.Itoa(core)}, argv...)
}

// startProcess starts argv with its stderr in logPath and its stdout in stdout (nil
// discards it).
func startProcess(name, logPath string, stdout io.Writer, argv []string) (*process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{}), log: log}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process's ID.
func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM, waits up to timeout for the exit, then kills the process. It returns
// the CPU time and peak RSS (KiB) the process used over its whole life, from wait4.
func (p *process) stop(timeout time.Duration) (cpu time.Duration, maxRSSKiB int64, err error) {
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

// waitFor polls cond every 20 ms until it holds, the process exits, ctx ends or timeout
// passes. Polling is the only way to see a port open or a count settle in another process.
func (p *process) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-p.exited:
			return fmt.Errorf("%s exited while waiting for %s: %v\n%s", p.name, what, p.err, tail(p.log.Name(), 15))
		case <-deadline.C:
			return fmt.Errorf("%s: no %s within %s\n%s", p.name, what, timeout, tail(p.log.Name(), 15))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
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

// sinkRun is a running `morse-load sink`.
type sinkRun struct {
	proc *process
	addr string
}

// freshSink returns the sink that answers at rate lines a second (0: at once), started on
// first use, with its counters zeroed.
func (e *env) freshSink(rate float64) (*sinkRun, error) {
	s, ok := e.sinks[rate]
	if !ok {
		var err error
		if s, err = startSink(e.loadBin, e.dir, e.loadCore, rate); err != nil {
			return nil, err
		}
		if e.sinks == nil {
			e.sinks = map[float64]*sinkRun{}
		}
		e.sinks[rate] = s
	}
	return s, e.resetSink(s.addr)
}

// stopSinks stops every sink freshSink started.
func (e *env) stopSinks() {
	for rate, s := range e.sinks {
		_, _, _ = s.proc.stop(10 * time.Second)
		delete(e.sinks, rate)
	}
}

// startSink starts `morse-load sink` on a free loopback port, counting distinct lines and
// answering at rate lines a second (0: at once), and returns it with its address, which the
// sink prints as the first line of its stdout.
func startSink(loadBin, dir string, core int, rate float64) (*sinkRun, error) {
	pr, pw := io.Pipe()
	logPath := fmt.Sprintf("%s/sink-%.0f.log", dir, rate)
	p, err := startProcess("sink", logPath, pw, pinned(core, loadBin, "sink", "--addr", "127.0.0.1:0",
		"--lifetime", "1h", "--distinct", "--lines-per-sec", strconv.FormatFloat(rate, 'f', -1, 64)))
	if err != nil {
		return nil, err
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		first := true
		for sc.Scan() { // read to the end so that the sink never blocks on a full pipe
			if first {
				addrc <- strings.TrimSpace(sc.Text())
				first = false
			}
		}
		close(addrc)
	}()
	go func() {
		<-p.exited
		_ = pw.Close()
	}()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case addr, ok := <-addrc:
		if ok && addr != "" {
			return &sinkRun{proc: p, addr: addr}, nil
		}
	case <-t.C:
	}
	_, _, _ = p.stop(5 * time.Second)
	return nil, fmt.Errorf("sink printed no address\n%s", tail(logPath, 10))
}
