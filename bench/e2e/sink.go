package e2e

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse/bench/launch"
)

// sinkRun is a running `morse-bench sink`.
type sinkRun struct {
	proc *launch.Process
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

// stopSinks stops every sink freshSink started, and IoTDB.
func (e *env) stopSinks() {
	if e.iotdb != nil {
		e.iotdb.srv.Close()
		e.iotdb = nil
	}
	for rate, s := range e.sinks {
		_, _, _ = s.proc.Stop(10 * time.Second)
		delete(e.sinks, rate)
	}
}

// startSink starts `morse-bench sink` on a free loopback port, counting distinct lines and
// answering at rate lines a second (0: at once), and returns it with its address, which the
// sink prints as the first line of its stdout.
func startSink(loadBin, dir string, core int, rate float64) (*sinkRun, error) {
	p, addr, err := startPrinting("sink", fmt.Sprintf("%s/sink-%.0f.log", dir, rate), launch.Pinned(core, loadBin, "sink",
		"--addr", "127.0.0.1:0", "--lifetime", "1h", "--distinct", "--lines-per-sec", strconv.FormatFloat(rate, 'f', -1, 64)))
	if err != nil {
		return nil, err
	}
	return &sinkRun{proc: p, addr: addr}, nil
}

// startPrinting starts a child of morse-bench that prints where it listens as the first
// line of its stdout (the sink, the scrape targets), and returns it with that line.
func startPrinting(name, logPath string, argv []string) (*launch.Process, string, error) {
	pr, pw := io.Pipe()
	p, err := launch.Start(name, logPath, pw, argv)
	if err != nil {
		return nil, "", err
	}
	linec := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		first := true
		for sc.Scan() { // read to the end so that the child never blocks on a full pipe
			if first {
				linec <- strings.TrimSpace(sc.Text())
				first = false
			}
		}
		close(linec)
	}()
	go func() {
		<-p.Exited()
		_ = pw.Close()
	}()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case line, ok := <-linec:
		if ok && line != "" {
			return p, line, nil
		}
	case <-t.C:
	}
	_, _, _ = p.Stop(5 * time.Second)
	return nil, "", fmt.Errorf("%s printed no address\n%s", name, launch.Tail(logPath, 10))
}
