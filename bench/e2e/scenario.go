package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/morse-agent/morse/bench/launch"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
)

// scenario is one measured run: a load over one transport into one listener of a fresh
// agent whose InfluxDB output writes to the sink. A scenario without an input sends
// straight to the sink, which measures the load tool and the sink alone.
type scenario struct {
	Name            string  `json:"name"`
	Transport       string  `json:"transport"`
	Input           string  `json:"input,omitempty"`
	Connections     int     `json:"connections"`
	LinesPerRequest int     `json:"lines_per_request"`
	Rate            float64 `json:"rate"` // 0 is flat out
	// UDPPayload caps the load tool's datagrams, in bytes; 0 keeps its default, 64000.
	UDPPayload int `json:"udp_payload,omitempty"`
	// ReadBufferSize is the listener's read_buffer_size; empty keeps the OS default.
	ReadBufferSize string `json:"read_buffer_size,omitempty"`
	// SendBuffer is the load tool's SO_SNDBUF per TCP connection; 0 keeps the OS default.
	SendBuffer int `json:"send_buffer,omitempty"`
	// BufferStrategy is the output's buffer_strategy; empty keeps the memory buffer.
	BufferStrategy string `json:"buffer_strategy,omitempty"`
	// Lines and Duration bound this scenario's load instead of the command line's, if set.
	Lines    int64         `json:"lines,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	// SinkRate slows the sink's answers to this many lines a second; 0 answers at once.
	SinkRate float64 `json:"sink_lines_per_sec,omitempty"`
	// Group is the part of issue 13's matrix the scenario belongs to, for the matrix only.
	Group string `json:"group,omitempty"`
	// Sink is "iotdb" for outputs.iotdb into a real IoTDB (iotdb.go); empty is the InfluxDB
	// output into the discarding sink.
	Sink string `json:"sink,omitempty"`
	// Hosts is the load tool's --hosts; 0 keeps its default, 1000.
	Hosts int `json:"hosts,omitempty"`
	// IoTDBTagsAs is outputs.iotdb's convert_tags_to; empty keeps device_id.
	IoTDBTagsAs string `json:"iotdb_convert_tags_to,omitempty"`
}

// env is what every scenario shares.
type env struct {
	morseBin, loadBin   string
	dir                 string               // a temporary directory for configs and logs
	sinks               map[float64]*sinkRun // by the rate they answer at
	agentCore, loadCore int
	duration            time.Duration
	lines               int64
	http                *http.Client
	iotdb               *iotdbSink // started by the first IoTDB scenario
}

// result is what one scenario measured.
type result struct {
	Scenario    scenario `json:"scenario"`
	LinesSent   int64    `json:"lines_sent"`
	LinesFailed int64    `json:"lines_failed"`
	LoadSec     float64  `json:"load_sec"`
	SentPerSec  float64  `json:"sent_lines_per_sec"`
	// LinesDelivered counts the distinct lines the sink received, Duplicates the lines it
	// received more than once.
	LinesDelivered int64 `json:"lines_delivered"`
	Duplicates     int64 `json:"duplicates"`
	Retries        int64 `json:"retries"`
	// OutputDrops is what the agent's outputs dropped (internal_write.metrics_dropped):
	// evictions from a full buffer, for a healthy sink.
	OutputDrops     int64   `json:"output_drops"`
	DeliveredPerSec float64 `json:"delivered_lines_per_sec"`
	DeliveryPct     float64 `json:"delivery_pct"`
	AgentCPUSec     float64 `json:"agent_cpu_sec,omitempty"`
	CPUMicrosLine   float64 `json:"agent_cpu_us_per_line,omitempty"`
	PeakRSSMiB      float64 `json:"agent_peak_rss_mib,omitempty"`
	UDPKernelDrops  int64   `json:"udp_kernel_drops,omitempty"`
	UDPCapturePct   float64 `json:"udp_capture_pct,omitempty"`
	LoadCPUSec      float64 `json:"load_cpu_sec"`
	// ForeignCPUPct is the CPU the rest of the machine used during the scenario, in percent
	// of all cores; anything above a few percent means a neighbour skewed the figures.
	ForeignCPUPct float64          `json:"foreign_cpu_pct"`
	AgentCounters map[string]int64 `json:"agent_counters,omitempty"`
	Load          *loadgen.Report  `json:"load,omitempty"`
	Error         string           `json:"error,omitempty"`
	// OtherRuns sums up the repeats that were not kept, with --repeat.
	OtherRuns []runSummary `json:"other_runs,omitempty"`
}

// runSummary is the gist of a repeat that was not kept.
type runSummary struct {
	DeliveredPerSec float64 `json:"delivered_lines_per_sec"`
	DeliveryPct     float64 `json:"delivery_pct"`
	CPUMicrosLine   float64 `json:"agent_cpu_us_per_line"`
	UDPCapturePct   float64 `json:"udp_capture_pct,omitempty"`
	ForeignCPUPct   float64 `json:"foreign_cpu_pct"`
	Error           string  `json:"error,omitempty"`
}

func (r *result) summary() runSummary {
	return runSummary{DeliveredPerSec: r.DeliveredPerSec, DeliveryPct: r.DeliveryPct, CPUMicrosLine: r.CPUMicrosLine,
		UDPCapturePct: r.UDPCapturePct, ForeignCPUPct: r.ForeignCPUPct, Error: r.Error}
}

// run measures one scenario. Any failure is recorded in the result, so that one broken
// scenario does not hide the others.
func (e *env) run(ctx context.Context, sc scenario) result {
	res := result{Scenario: sc}
	var err error
	switch {
	case sc.Input == "":
		err = e.runDirect(ctx, &res)
	case sc.Sink == sinkIoTDB:
		err = e.runIoTDB(ctx, &res)
	default:
		err = e.runAgent(ctx, &res)
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

// runDirect sends straight to the sink.
func (e *env) runDirect(ctx context.Context, res *result) error {
	sink, err := e.freshSink(res.Scenario.SinkRate)
	if err != nil {
		return err
	}
	noise := startNoise(sink.proc.PID())
	rep, loadCPU, err := e.load(ctx, res.Scenario, sink.addr, "/write?db=bench")
	if err != nil {
		return err
	}
	res.setLoad(rep, loadCPU)
	st, err := e.sinkStats(sink.addr)
	res.setDelivered(st)
	res.ForeignCPUPct = noise.foreignPct(0, loadCPU, runtime.NumCPU())
	return err
}

// runAgent starts an agent with the scenario's listener, loads it, waits for it to deliver,
// stops it and measures.
func (e *env) runAgent(ctx context.Context, res *result) error {
	sc := res.Scenario
	sink, err := e.freshSink(sc.SinkRate)
	if err != nil {
		return err
	}
	a, err := e.startAgent(ctx, sc, sink.addr)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _, _ = a.proc.Stop(10 * time.Second)
		}
	}()
	cpu0, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	noise := startNoise(sink.proc.PID())
	rep, loadCPU, err := e.load(ctx, sc, a.addr, "/write?db=bench")
	if err != nil {
		return err
	}
	res.setLoad(rep, loadCPU)
	if sc.Transport == loadgen.TransportUDP {
		e.measureUDP(ctx, a, res)
	}
	e.waitDelivered(ctx, a.proc, sink.addr, rep.Lines+rep.FailedLines)
	hwm, _ := statusKiB(a.proc.PID(), "VmHWM")
	res.AgentCounters = readCounters(a.internalFile)
	cpu, maxRSS, err := a.proc.Stop(time.Minute)
	stopped = true
	if err != nil {
		return err
	}
	st, err := e.sinkStats(sink.addr)
	if err != nil {
		return err
	}
	res.setDelivered(st)
	res.OutputDrops = outputDrops(res.AgentCounters)
	res.AgentCPUSec = (cpu - cpu0).Seconds()
	if res.LinesSent > 0 {
		res.CPUMicrosLine = 1e6 * res.AgentCPUSec / float64(res.LinesSent)
	}
	res.PeakRSSMiB = float64(max(hwm, maxRSS)) / 1024
	res.ForeignCPUPct = noise.foreignPct(cpu-cpu0, loadCPU, runtime.NumCPU())
	return nil
}

// agentRun is an agent started for one scenario.
type agentRun struct {
	proc         *launch.Process
	addr         string // host:port the load goes to
	port         int
	internalFile string
}

func (e *env) startAgent(ctx context.Context, sc scenario, sinkAddr string) (*agentRun, error) {
	return e.startAgentWith(ctx, sc, agentConfig{SinkAddr: sinkAddr})
}

// startAgentWith starts an agent with the scenario's listener and conf's output.
func (e *env) startAgentWith(ctx context.Context, sc scenario, conf agentConfig) (*agentRun, error) {
	network := "tcp"
	if sc.Transport == loadgen.TransportUDP {
		network = "udp"
	}
	ports, err := testutil.FreePorts(network, 1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	a := &agentRun{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port,
		internalFile: filepath.Join(e.dir, sc.Name+"-internal.out")}
	listen := a.addr
	if sc.Input == "socket_listener" {
		listen = network + "://" + a.addr
	}
	conf.Input, conf.Listen, conf.ReadBufferSize, conf.InternalFile = sc.Input, listen, sc.ReadBufferSize, a.internalFile
	if sc.BufferStrategy == "disk" {
		conf.BufferDir = filepath.Join(e.dir, sc.Name+"-buffer")
	}
	confPath := filepath.Join(e.dir, sc.Name+".conf")
	if err := os.WriteFile(confPath, []byte(conf.render()), 0o600); err != nil {
		return nil, err
	}
	argv := launch.Pinned(e.agentCore, e.morseBin, "--config", confPath)
	if a.proc, err = launch.Start("morse", filepath.Join(e.dir, sc.Name+"-morse.log"), nil, argv); err != nil {
		return nil, err
	}
	ready := func() bool {
		if network == "udp" {
			s, err := testutil.ReadUDPPort(port)
			return err == nil && s.Sockets > 0
		}
		c, err := net.DialTimeout("tcp", a.addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}
	if err := a.proc.WaitFor(ctx, 15*time.Second, "listener on "+listen, ready); err != nil {
		_, _, _ = a.proc.Stop(5 * time.Second)
		return nil, err
	}
	return a, nil
}

// load runs the load tool, pinned to its core, and reads its JSON report. An exit status
// of 1 only says that some lines failed; the report counts them.
func (e *env) load(ctx context.Context, sc scenario, addr, path string) (*loadgen.Report, time.Duration, error) {
	duration, lines := e.duration, e.lines
	if sc.Duration > 0 {
		duration = sc.Duration
	}
	if sc.Lines > 0 {
		lines = sc.Lines
	}
	args := []string{e.loadBin, "load", "--json", "--transport", sc.Transport, "--addr", addr, "--path", path,
		"--connections", strconv.Itoa(sc.Connections), "--lines-per-request", strconv.Itoa(sc.LinesPerRequest),
		"--rate", strconv.FormatFloat(sc.Rate, 'f', -1, 64), "--duration", duration.String()}
	if lines > 0 {
		args = append(args, "--lines", strconv.FormatInt(lines, 10))
	}
	if sc.UDPPayload > 0 {
		args = append(args, "--udp-payload", strconv.Itoa(sc.UDPPayload))
	}
	if sc.SendBuffer > 0 {
		args = append(args, "--sndbuf", strconv.Itoa(sc.SendBuffer))
	}
	if sc.Hosts > 0 {
		args = append(args, "--hosts", strconv.Itoa(sc.Hosts))
	}
	ctx, cancel := context.WithTimeout(ctx, duration+time.Minute)
	defer cancel()
	argv := launch.Pinned(e.loadCore, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, 0, fmt.Errorf("load tool: %v: %s", runErr, bytes.TrimSpace(stderr.Bytes()))
	}
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return &rep, cpu, nil
}

func (r *result) setLoad(rep *loadgen.Report, cpu time.Duration) {
	r.Load, r.LoadCPUSec = rep, cpu.Seconds()
	r.LinesSent, r.LinesFailed, r.LoadSec, r.SentPerSec = rep.Lines, rep.FailedLines, rep.ElapsedSec, rep.LinesPerSec
	r.Retries = rep.Retries
}

// setDelivered takes the sink's distinct lines as delivered. The share is of every line the
// load tool tried to send: a line it gave up on was not delivered either.
func (r *result) setDelivered(st loadgen.SinkStats) {
	n := st.Distinct
	r.LinesDelivered, r.Duplicates = n, st.Duplicates
	if r.LoadSec > 0 {
		r.DeliveredPerSec = float64(n) / r.LoadSec
	}
	if tried := r.LinesSent + r.LinesFailed; tried > 0 {
		r.DeliveryPct = 100 * float64(n) / float64(tried)
	}
}
