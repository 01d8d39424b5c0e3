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
	pr, pw := io.Pipe()
	logPath := fmt.Sprintf("%s/sink-%.0f.log", dir, rate)
	p, err := launch.Start("sink", logPath, pw, launch.Pinned(core, loadBin, "sink", "--addr", "127.0.0.1:0",
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
		<-p.Exited()
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
	_, _, _ = p.Stop(5 * time.Second)
	return nil, fmt.Errorf("sink printed no address\n%s", launch.Tail(logPath, 10))
}
