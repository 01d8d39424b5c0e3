package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
)

// pushLimit is issue 36's target for the push cells: morse at most half vmagent's CPU per
// sample.
const pushLimit = 0.5

// runPush measures each push cell selected: line protocol over HTTP, 4 and 16 connections ×
// bodies of 100, 1000 and 5000 lines, into morse's influxdb_listener and vmagent's /write,
// each remote-writing to VictoriaMetrics.
func (o *vmOptions) runPush(ctx context.Context, e *env, vm *vmServer, rep *vmReport, stderr io.Writer) error {
	for _, conns := range []int{4, 16} {
		for _, body := range []int{100, 1000, 5000} {
			c := vmCell{Name: fmt.Sprintf("push-c%d-b%d", conns, body), Group: "push", Connections: conns, LinesPerRequest: body}
			if !o.runs("push", c.Name) {
				continue
			}
			sc := scenario{Name: c.Name, Transport: loadgen.TransportHTTP, Connections: conns, LinesPerRequest: body, Lines: o.lines}
			c.Morse = o.best(ctx, c.Name+" morse", stderr, func() agentRunFigures {
				return o.pushRun(ctx, e, vm, sc, "morse")
			})
			c.VMAgent = o.best(ctx, c.Name+" vmagent", stderr, func() agentRunFigures {
				return o.pushRun(ctx, e, vm, sc, "vmagent")
			})
			if err := ctx.Err(); err != nil {
				return err
			}
			c.judge(pushLimit)
			rep.Cells = append(rep.Cells, c)
		}
	}
	return nil
}

// pushRun starts a fresh agent, sends the cell's lines to it, waits until VictoriaMetrics'
// count of samples stands still, and measures the agent's CPU over that span, per sample
// VictoriaMetrics accepted. Any failure is recorded in the figures.
func (o *vmOptions) pushRun(ctx context.Context, e *env, vm *vmServer, sc scenario, agent string) agentRunFigures {
	f := agentRunFigures{LoadAvg1: loadAvg1()}
	a, err := o.startPushAgent(ctx, e, vm, sc.Name, agent)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	defer func() { _, _, _ = a.proc.Stop(30 * time.Second) }()
	if err := o.measurePush(ctx, e, vm, sc, a, &f); err != nil {
		f.Error = err.Error()
	}
	return f
}

func (o *vmOptions) measurePush(ctx context.Context, e *env, vm *vmServer, sc scenario, a *competitor, f *agentRunFigures) error {
	rows0, err := vm.rows()
	if err != nil {
		return err
	}
	cpu0, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	noise := startNoise(vm.proc.PID())
	rep, loadCPU, err := e.load(ctx, sc, a.addr, "/write")
	if err != nil {
		return err
	}
	rows1, err := vm.waitRowsSettled(ctx, a.proc, rows0)
	if err != nil {
		return err
	}
	cpu1, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	hwm, _ := statusKiB(a.proc.PID(), "VmHWM")
	f.Lines, f.Failed, f.LinesPerSec = rep.Lines, rep.FailedLines, rep.LinesPerSec
	f.setCPU(cpu1-cpu0, rows1-rows0, rep.ElapsedSec)
	f.CPUMicrosLine = 1e6 * f.CPUSec / float64(max(1, rep.Lines))
	f.PeakRSSMiB = float64(hwm) / 1024
	f.ForeignCPUPct = noise.foreignPct(cpu1-cpu0, loadCPU, runtime.NumCPU())
	return nil
}

// setCPU records the agent's CPU time over a span in which VictoriaMetrics accepted samples
// of it, and the rate over sec seconds.
func (f *agentRunFigures) setCPU(cpu time.Duration, samples int64, sec float64) {
	f.CPUSec, f.Samples = cpu.Seconds(), samples
	if samples > 0 {
		f.CPUMicrosSample = 1e6 * f.CPUSec / float64(samples)
	}
	if sec > 0 {
		f.SamplesPerSec = float64(samples) / sec
	}
}

// startPushAgent starts morse with influxdb_listener, or vmagent, both writing to vm.
func (o *vmOptions) startPushAgent(ctx context.Context, e *env, vm *vmServer, name, agent string) (*competitor, error) {
	if agent == "vmagent" {
		return vm.startVMAgent(ctx, o.vmagentBin, e.dir, name, o.agentCore, "")
	}
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	conf := morseRemoteWriteConfig(o.batch, o.bufferLimit, "10s", vm.writeURL()) +
		fmt.Sprintf("\n[[inputs.influxdb_listener]]\n  service_address = %q\n", addr)
	c, err := startMorse(ctx, o.morseBin, e.dir, name, o.agentCore, conf, func() bool { return dialable(addr) })
	if err != nil {
		return nil, err
	}
	c.addr = addr
	return c, nil
}

// morseRemoteWriteConfig is the agent section and the remote-write output of both
// benchmarks: Telegraf's defaults but for the batch and buffer asked for, no host tag
// (vmagent adds none), and outputs.http with the prometheusremotewrite serializer.
func morseRemoteWriteConfig(batch, buffer int, interval, writeURL string) string {
	return fmt.Sprintf(`# Written by morse-bench vmagent for one benchmark cell.
[agent]
  interval = %q
  flush_interval = "1s"
  flush_jitter = "0s"
  metric_batch_size = %d
  metric_buffer_limit = %d
  omit_hostname = true

[[outputs.http]]
  url = %q
  data_format = "prometheusremotewrite"
`, interval, batch, buffer, writeURL)
}

// freeLoopback returns 127.0.0.1:PORT with a port free now (testutil's finder).
func freeLoopback() (string, error) {
	ports, err := testutil.FreePorts("tcp", 1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}
