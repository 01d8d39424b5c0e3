package flood

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/morse-agent/morse/bench/launch"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
)

// settleFor is how long the count must stand still after the flood before the agent counts
// as done: three gathers, so that one slow gather is not taken for the end.
const settleFor = 3 * time.Second

// loadFunc sends one scenario's flood to addr and returns the load tool's report and the
// CPU time it used.
type loadFunc func(ctx context.Context, sc scenario, addr string) (*loadgen.Report, time.Duration, error)

// env is what every scenario of a run shares.
type env struct {
	o    *options
	dir  string // configs, logs and the agent's output
	load loadFunc
}

// run measures every selected scenario. A scenario that fails is recorded in its result,
// so that one broken scenario does not hide the others.
func (o *options) run(ctx context.Context, stderr io.Writer) (*report, error) {
	dir, err := os.MkdirTemp("", "morse-bench-flood-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintln(stderr, "morse-bench flood: keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	e := &env{o: o, dir: dir}
	e.load = e.loadTool
	rep := newReport(o)
	for _, sc := range o.selected() {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res := e.run(ctx, sc)
		fmt.Fprintf(stderr, "morse-bench flood: %s: sent %d, captured %d (%.1f%%), agent %.2f CPU s%s\n",
			sc.Name, res.LinesSent, res.Captured, res.CapturePct, res.AgentCPUSec, errNote(res.Error))
		rep.Results = append(rep.Results, res)
	}
	rep.LoadAvgAfter = loadAvg()
	return rep, nil
}

func errNote(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// run measures one scenario: a fresh agent, the flood, the wait for the count to settle.
func (e *env) run(ctx context.Context, sc scenario) result {
	res := result{Scenario: sc, LoadAvg1: -1}
	if err := e.measure(ctx, sc, &res); err != nil {
		res.Error = err.Error()
	}
	return res
}

func (e *env) measure(ctx context.Context, sc scenario, res *result) error {
	a, err := e.startAgent(ctx, sc)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped { // only if an error left it running
			_, _, _ = a.proc.Stop(10 * time.Second)
		}
	}()
	cpu0, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	rep, loadCPU, err := e.load(ctx, sc, a.addr)
	if err != nil {
		return err
	}
	res.setLoad(rep, loadCPU)
	if sc.Protocol == "udp" {
		res.KernelDrops = drainUDP(ctx, a)
	}
	if err := waitSettled(ctx, a, rep.Lines); err != nil {
		return err
	}
	cpu1, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	res.LoadAvg1 = loadAvg()
	_, _, err = a.proc.Stop(time.Minute)
	stopped = true
	if err != nil {
		return err
	}
	// Whatever the shutdown flushed counts too: it was captured during the flood.
	if err := a.tally.update(); err != nil {
		return err
	}
	res.setCaptured(a.tally, cpu1-cpu0)
	return nil
}

// agentRun is an agent started for one scenario.
type agentRun struct {
	proc  *launch.Process
	addr  string // 127.0.0.1:PORT, where the flood goes
	port  int
	tally *tally
}

// startAgent writes the scenario's config with a port free at run time, starts the agent on
// its core and waits until its listener is bound.
func (e *env) startAgent(ctx context.Context, sc scenario) (*agentRun, error) {
	ports, err := testutil.FreePorts(sc.Protocol, 1)
	if err != nil {
		return nil, err
	}
	a := &agentRun{port: ports[0], addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	out := filepath.Join(e.dir, sc.Name+".out")
	a.tally = newTally(out, "")
	if sc.Input == "syslog" {
		a.tally = newTally(out, "syslog")
	}
	confPath := filepath.Join(e.dir, sc.Name+".conf")
	conf := agentConfig{Input: sc.Input, Protocol: sc.Protocol, Listen: a.addr, OutFile: out}
	if err := os.WriteFile(confPath, []byte(conf.render()), 0o600); err != nil {
		return nil, err
	}
	argv := launch.Pinned(e.o.agentCore, e.o.morseBin, "--config", confPath)
	if a.proc, err = launch.Start("morse", filepath.Join(e.dir, sc.Name+"-morse.log"), nil, argv); err != nil {
		return nil, err
	}
	ready := func() bool {
		if sc.Protocol == "udp" {
			s, err := testutil.ReadUDPPort(a.port)
			return err == nil && s.Sockets > 0
		}
		c, err := net.DialTimeout("tcp", a.addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}
	if err := a.proc.WaitFor(ctx, 30*time.Second, "listener on "+a.addr, ready); err != nil {
		_, _, _ = a.proc.Stop(5 * time.Second)
		return nil, err
	}
	return a, nil
}

// drainUDP waits for the agent to read what is queued on its socket, then returns the
// datagrams the kernel dropped because the socket's buffer was full: lines lost before the
// agent could see, let alone count, them.
func drainUDP(ctx context.Context, a *agentRun) int64 {
	var s testutil.UDPPort
	_ = a.proc.WaitFor(ctx, 10*time.Second, "UDP queue to drain", func() bool {
		var err error
		s, err = testutil.ReadUDPPort(a.port)
		return err != nil || s.Queued == 0
	})
	return s.Drops
}

// waitSettled follows the agent's output until it has counted every line sent, or the count
// has stood still for settleFor, at most a minute.
func waitSettled(ctx context.Context, a *agentRun, sent int64) error {
	last, changed := int64(-1), time.Now()
	var readErr error
	err := a.proc.WaitFor(ctx, time.Minute, "the count to settle", func() bool {
		if readErr = a.tally.update(); readErr != nil {
			return true
		}
		if a.tally.Captured != last {
			last, changed = a.tally.Captured, time.Now()
		}
		return last >= sent || time.Since(changed) >= settleFor
	})
	if readErr != nil {
		return readErr
	}
	return err
}

// loadTool runs the load tool, pinned to its core, and reads its JSON report. An exit
// status of 1 only says that some lines failed; the report counts them.
func (e *env) loadTool(ctx context.Context, sc scenario, addr string) (*loadgen.Report, time.Duration, error) {
	args := []string{e.o.loadBin, "load", "--json", "--format", sc.Input, "--transport", sc.Protocol,
		"--addr", addr, "--duration", e.o.duration.String(), "--hosts", strconv.Itoa(e.o.hosts),
		"--connections", strconv.Itoa(sc.Connections), "--lines-per-request", strconv.Itoa(sc.LinesPerRequest)}
	if sc.UDPPayload > 0 {
		args = append(args, "--udp-payload", strconv.Itoa(sc.UDPPayload))
	}
	var stdout bytes.Buffer
	p, err := launch.Start("load", filepath.Join(e.dir, sc.Name+"-load.log"), &stdout, launch.Pinned(e.o.loadCore, args...))
	if err != nil {
		return nil, 0, err
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
	case <-time.After(e.o.duration + time.Minute):
	}
	cpu, _, stopErr := p.Stop(5 * time.Second)
	var rep loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, 0, fmt.Errorf("load tool: %v: %s", stopErr, launch.Tail(p.LogPath(), 5))
	}
	return &rep, cpu, nil
}

// loadAvg is the machine's one-minute load average, -1 when /proc/loadavg cannot be read:
// the harness shares the machine, and the report says how busy it was.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	return parseLoadAvg(string(b))
}

func parseLoadAvg(s string) float64 {
	var one float64
	if _, err := fmt.Sscan(s, &one); err != nil {
		return -1
	}
	return one
}

// cpus is the number of cores the report states.
func cpus() int { return runtime.NumCPU() }
