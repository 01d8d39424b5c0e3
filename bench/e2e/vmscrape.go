package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse/bench/launch"
	"github.com/morse-agent/morse/internal/testutil"
)

// scrapeLimit is issue 36's target for the scrape cell: morse's CPU per sample at most
// vmagent's.
const scrapeLimit = 1.0

// nodeExporterVersion is Debian bookworm's prometheus-node-exporter, which
// scripts/ensure-prometheus.sh unpacks into the cache.
const nodeExporterVersion = "1.5.0"

func nodeExporterBinary() (string, error) {
	return testutil.CachedBinary("MORSE_NODE_EXPORTER", "node-exporter", nodeExporterVersion, "prometheus-node-exporter",
		"scripts/ensure-prometheus.sh")
}

// runScrape measures the scrape cell: o.targets targets serving a node_exporter capture of
// at least o.series samples, scraped every o.scrapeInterval by morse (inputs.prometheus)
// and by vmagent (-promscrape.config), each remote-writing to VictoriaMetrics.
func (o *vmOptions) runScrape(ctx context.Context, e *env, vm *vmServer, rep *vmReport, stderr io.Writer) error {
	capture, err := o.captureNodeExporter(ctx, e.dir)
	if err != nil {
		return fmt.Errorf("node_exporter capture: %w", err)
	}
	body, served := scaleExposition(capture, o.series)
	_, rep.CapturedSeries = scaleExposition(capture, 0)
	path := filepath.Join(e.dir, "exposition.prom")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return err
	}
	exp, line, err := startPrinting("expose", filepath.Join(e.dir, "expose.log"), launch.Pinned(o.loadCore, o.loadBin, "expose",
		"--file", path, "--targets", strconv.Itoa(o.targets), "--lifetime", "2h"))
	if err != nil {
		return err
	}
	defer func() { _, _, _ = exp.Stop(10 * time.Second) }()
	targets := strings.Fields(line)
	rep.ScrapeInterval, rep.ScrapeWindow = o.scrapeInterval.String(), o.window.String()
	c := vmCell{Name: fmt.Sprintf("scrape-t%d", len(targets)), Group: "scrape", Targets: len(targets), SeriesPerTarget: served}
	c.Morse = o.best(ctx, c.Name+" morse", stderr, func() agentRunFigures {
		return o.scrapeRun(ctx, e, vm, exp, c.Name, "morse", targets, served)
	})
	c.VMAgent = o.best(ctx, c.Name+" vmagent", stderr, func() agentRunFigures {
		return o.scrapeRun(ctx, e, vm, exp, c.Name, "vmagent", targets, served)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	c.judge(scrapeLimit)
	rep.Cells = append(rep.Cells, c)
	return nil
}

// captureNodeExporter runs the real node_exporter with its default collectors once, on the
// load core, and returns its /metrics.
func (o *vmOptions) captureNodeExporter(ctx context.Context, dir string) ([]byte, error) {
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	p, err := launch.Start("node_exporter", filepath.Join(dir, "node_exporter.log"), nil, launch.Pinned(o.loadCore,
		o.nodeExporterBin, "--web.listen-address="+addr, "--log.level=warn"))
	if err != nil {
		return nil, err
	}
	defer func() { _, _, _ = p.Stop(10 * time.Second) }()
	url := "http://" + addr + "/metrics"
	hc := newHTTPClient()
	defer hc.CloseIdleConnections()
	if err := p.WaitFor(ctx, 30*time.Second, "/metrics", func() bool { return httpOK(hc, url) }); err != nil {
		return nil, err
	}
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// scrapeRun starts a fresh agent scraping the targets, waits for its first samples to
// reach VictoriaMetrics and a warm-up, then measures its CPU over a window, per sample
// VictoriaMetrics accepted in that window.
func (o *vmOptions) scrapeRun(ctx context.Context, e *env, vm *vmServer, exp *launch.Process, cell, agent string,
	targets []string, series int) agentRunFigures {
	f := agentRunFigures{LoadAvg1: loadAvg1()}
	a, err := o.startScrapeAgent(ctx, e, vm, cell, agent, targets, series)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	defer func() { _, _, _ = a.proc.Stop(30 * time.Second) }()
	if err := o.measureScrape(ctx, vm, exp, a, &f); err != nil {
		f.Error = err.Error()
	}
	return f
}

func (o *vmOptions) measureScrape(ctx context.Context, vm *vmServer, exp *launch.Process, a *competitor, f *agentRunFigures) error {
	start, err := vm.rows()
	if err != nil {
		return err
	}
	if err := a.proc.WaitFor(ctx, 30*time.Second, "first samples", func() bool {
		n, err := vm.rows()
		return err != nil || n > start
	}); err != nil {
		return err
	}
	if err := pause(ctx, o.warmup); err != nil {
		return err
	}
	rows0, err := vm.rows()
	if err != nil {
		return err
	}
	cpu0, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	exp0, _ := testutil.ProcCPU(exp.PID())
	noise := startNoise(vm.proc.PID())
	if err := pause(ctx, o.window); err != nil {
		return err
	}
	rows1, err := vm.rows()
	if err != nil {
		return err
	}
	cpu1, err := testutil.ProcCPU(a.proc.PID())
	if err != nil {
		return err
	}
	exp1, _ := testutil.ProcCPU(exp.PID())
	hwm, _ := statusKiB(a.proc.PID(), "VmHWM")
	f.setCPU(cpu1-cpu0, rows1-rows0, o.window.Seconds())
	f.PeakRSSMiB = float64(hwm) / 1024
	f.ForeignCPUPct = noise.foreignPct(cpu1-cpu0, exp1-exp0, runtime.NumCPU())
	return nil
}

// pause waits d, or less if ctx ends: the measured window is wall time by design.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startScrapeAgent starts morse with inputs.prometheus (metric_version 2, the form
// Telegraf's documentation pairs with remote write), or vmagent with a scrape config, both
// scraping every target at o.scrapeInterval and writing to vm.
func (o *vmOptions) startScrapeAgent(ctx context.Context, e *env, vm *vmServer, cell, agent string,
	targets []string, series int) (*competitor, error) {
	urls := make([]string, len(targets))
	for i, t := range targets {
		urls[i] = strconv.Quote("http://" + t + "/metrics")
	}
	if agent == "vmagent" {
		path := filepath.Join(e.dir, cell+"-scrape.yml")
		conf := fmt.Sprintf("global:\n  scrape_interval: %s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [%s]\n",
			o.scrapeInterval, strings.Join(quoteAll(targets), ", "))
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		return vm.startVMAgent(ctx, o.vmagentBin, e.dir, cell, o.agentCore, path)
	}
	// The buffer holds two scrapes of every target, so that one slow flush evicts nothing.
	buffer := max(o.bufferLimit, 2*len(targets)*series)
	conf := morseRemoteWriteConfig(o.batch, buffer, o.scrapeInterval.String(), vm.writeURL()) +
		fmt.Sprintf("\n[[inputs.prometheus]]\n  urls = [%s]\n  metric_version = 2\n", strings.Join(urls, ", "))
	return startMorse(ctx, o.morseBin, e.dir, cell, o.agentCore, conf, func() bool { return true })
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}
