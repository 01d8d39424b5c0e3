package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse/bench/launch"
	"github.com/morse-agent/morse/internal/testutil"
)

// vmVersion is the VictoriaMetrics release both the server and vmagent come from: Debian
// bookworm's victoria-metrics package, which scripts/ensure-victoriametrics.sh unpacks.
const vmVersion = "1.79.5"

// vmBinary finds victoria-metrics or vmagent where the ensure script put them, the same
// place the integration tests' launcher (internal/testserver) looks.
func vmBinary(name string) (string, error) {
	env := "MORSE_VICTORIA_METRICS"
	if name == "vmagent" {
		env = "MORSE_VMAGENT"
	}
	return testutil.CachedBinary(env, "victoria-metrics", vmVersion, name, "scripts/ensure-victoriametrics.sh")
}

// vmServer is the VictoriaMetrics the agents write to, for the whole run.
type vmServer struct {
	proc *launch.Process
	addr string
	http *http.Client
}

// startVM starts VictoriaMetrics pinned to core on a free loopback port, with its data in
// dir, and waits until /health answers.
func startVM(ctx context.Context, bin, dir string, core int, hc *http.Client) (*vmServer, error) {
	ports, err := testutil.FreePorts("tcp", 1)
	if err != nil {
		return nil, err
	}
	v := &vmServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), http: hc}
	argv := launch.Pinned(core, bin, "-httpListenAddr="+v.addr, "-storageDataPath="+filepath.Join(dir, "vmdata"),
		"-loggerLevel=WARN")
	if v.proc, err = launch.Start("victoria-metrics", filepath.Join(dir, "victoria-metrics.log"), nil, argv); err != nil {
		return nil, err
	}
	if err := v.proc.WaitFor(ctx, 30*time.Second, "/health", func() bool { return httpOK(hc, "http://"+v.addr+"/health") }); err != nil {
		_, _, _ = v.proc.Stop(10 * time.Second)
		return nil, err
	}
	return v, nil
}

// writeURL is where remote write goes.
func (v *vmServer) writeURL() string { return "http://" + v.addr + "/api/v1/write" }

// rows reads vm_rows_inserted_total{type="promremotewrite"} from VictoriaMetrics' own
// /metrics: the samples it accepted over remote write, counted as each request is handled.
func (v *vmServer) rows() (int64, error) {
	resp, err := v.http.Get("http://" + v.addr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("victoria-metrics /metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseRows(resp.Body)
}

func parseRows(r io.Reader) (int64, error) {
	const key = `vm_rows_inserted_total{type="promremotewrite"} `
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("victoria-metrics /metrics has no %s", strings.TrimSpace(key))
}

// waitRowsSettled waits until the rows count has stood still for settleFor after growing
// past from, at most a minute, and returns it: the agent has delivered what it will.
func (v *vmServer) waitRowsSettled(ctx context.Context, p *launch.Process, from int64) (int64, error) {
	last, changed := from, time.Now()
	var rerr error
	err := p.WaitFor(ctx, time.Minute, "delivery to VictoriaMetrics", func() bool {
		n, err := v.rows()
		if err != nil {
			rerr = err
			return true
		}
		if n != last {
			last, changed = n, time.Now()
		}
		return last > from && time.Since(changed) >= settleFor
	})
	if rerr != nil {
		return last, rerr
	}
	return last, err
}

// httpOK says whether GET url answers 200.
func httpOK(hc *http.Client, url string) bool {
	resp, err := hc.Get(url)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// loadAvg1 is the machine's one-minute load average.
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return -1
	}
	return v
}

// competitor is one agent of a cell, morse or vmagent, as the cell starts it.
type competitor struct {
	proc *launch.Process
	addr string // where the load goes (push cells)
}

// startVMAgent starts vmagent pinned to the agent's core, with its queue in a fresh
// directory so that nothing of a previous run is sent again, listening for line protocol
// on its own HTTP port (/write), scraping promConfig when set, writing to vm; it waits
// until /health answers.
func (v *vmServer) startVMAgent(ctx context.Context, bin, dir, name string, core int, promConfig string) (*competitor, error) {
	ports, err := testutil.FreePorts("tcp", 1)
	if err != nil {
		return nil, err
	}
	c := &competitor{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	args := []string{bin, "-httpListenAddr=" + c.addr, "-remoteWrite.url=" + v.writeURL(),
		"-remoteWrite.tmpDataPath=" + filepath.Join(dir, name+"-vmagent-queue"), "-loggerLevel=WARN"}
	if promConfig != "" {
		args = append(args, "-promscrape.config="+promConfig)
	}
	if c.proc, err = launch.Start("vmagent", filepath.Join(dir, name+"-vmagent.log"), nil, launch.Pinned(core, args...)); err != nil {
		return nil, err
	}
	if err := c.proc.WaitFor(ctx, 30*time.Second, "/health", func() bool { return httpOK(v.http, "http://"+c.addr+"/health") }); err != nil {
		_, _, _ = c.proc.Stop(10 * time.Second)
		return nil, err
	}
	return c, nil
}

// startMorse starts morse pinned to the agent's core with config conf, and waits until
// ready holds (the listener answers, for push cells).
func startMorse(ctx context.Context, bin, dir, name string, core int, conf string, ready func() bool) (*competitor, error) {
	path := filepath.Join(dir, name+"-morse.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	p, err := launch.Start("morse", filepath.Join(dir, name+"-morse.log"), nil, launch.Pinned(core, bin, "--config", path))
	if err != nil {
		return nil, err
	}
	if err := p.WaitFor(ctx, 30*time.Second, "readiness", ready); err != nil {
		_, _, _ = p.Stop(10 * time.Second)
		return nil, err
	}
	return &competitor{proc: p}, nil
}

// dialable says whether a TCP connection to addr opens.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}
