package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// vmOptions are the settings of `morse-bench vmagent`, issue 36's benchmarks of morse
// against vmagent 1.79.5: line protocol pushed over HTTP and node_exporter-sized targets
// scraped, both written to VictoriaMetrics by remote write, CPU per sample delivered.
type vmOptions struct {
	morseBin, loadBin   string
	vmBin, vmagentBin   string
	nodeExporterBin     string
	only                string
	out                 string
	agentCore, loadCore int
	lines               int64
	repeat              int
	batch, bufferLimit  int
	targets, series     int
	scrapeInterval      time.Duration
	warmup, window      time.Duration
	keep                bool
	strict              bool
}

func parseVMFlags(args []string, stderr io.Writer) (*vmOptions, error) {
	o := &vmOptions{}
	fs := flag.NewFlagSet("morse-bench vmagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.morseBin, "morse", "bin/morse", "the agent binary")
	fs.StringVar(&o.loadBin, "load", "", "the morse-bench binary that runs the load and the targets; default: this one")
	fs.StringVar(&o.vmBin, "victoria-metrics", "", "VictoriaMetrics' binary; default: the cache's (scripts/ensure-victoriametrics.sh)")
	fs.StringVar(&o.vmagentBin, "vmagent", "", "vmagent's binary; default: the cache's (scripts/ensure-victoriametrics.sh)")
	fs.StringVar(&o.nodeExporterBin, "node-exporter", "", "node_exporter's binary, captured once for the targets; default: the cache's (scripts/ensure-prometheus.sh)")
	fs.StringVar(&o.only, "only", "", "comma-separated cells or groups (push, scrape) to run; empty runs all")
	fs.StringVar(&o.out, "out", "", "write the results as JSON to this file")
	fs.IntVar(&o.agentCore, "agent-core", 0, "CPU core for the agent under test; -1 does not pin")
	fs.IntVar(&o.loadCore, "load-core", 1, "CPU core for the load tool, the targets and VictoriaMetrics; -1 does not pin")
	fs.Int64Var(&o.lines, "lines", 300000, "lines each push cell sends to each agent")
	fs.IntVar(&o.repeat, "repeat", 1, "run each agent of a cell this many times and keep the run other processes disturbed least")
	fs.IntVar(&o.batch, "morse-batch", 1000, "morse's metric_batch_size")
	fs.IntVar(&o.bufferLimit, "morse-buffer", 10000, "morse's metric_buffer_limit (the scrape cells raise it to hold two scrapes of every target)")
	fs.IntVar(&o.targets, "targets", 20, "scrape targets of the scrape cell")
	fs.IntVar(&o.series, "series", 1000, "samples each target serves at least: a capture of node_exporter, given more CPUs if smaller")
	fs.DurationVar(&o.scrapeInterval, "scrape-interval", time.Second, "how often each agent scrapes each target")
	fs.DurationVar(&o.warmup, "warmup", 5*time.Second, "scraping before the measured window")
	fs.DurationVar(&o.window, "window", 30*time.Second, "the measured window of the scrape cell")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory with configs and logs")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 when a target is missed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.resolve()
}

// resolve fills in the default binaries and checks the settings.
func (o *vmOptions) resolve() error {
	var err error
	if o.loadBin == "" {
		if o.loadBin, err = os.Executable(); err != nil {
			return fmt.Errorf("--load: %w", err)
		}
	}
	if o.vmBin == "" {
		if o.vmBin, err = vmBinary("victoria-metrics"); err != nil {
			return err
		}
	}
	if o.vmagentBin == "" {
		if o.vmagentBin, err = vmBinary("vmagent"); err != nil {
			return err
		}
	}
	if o.nodeExporterBin == "" && o.runs("scrape") {
		if o.nodeExporterBin, err = nodeExporterBinary(); err != nil {
			return err
		}
	}
	for _, bin := range []string{o.morseBin, o.loadBin} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%v (build it first: make build load-tool)", err)
		}
	}
	if o.lines < 1000 || o.repeat < 1 || o.repeat > 10 || o.targets < 1 || o.targets > 1000 || o.window <= 0 || o.scrapeInterval <= 0 {
		return errors.New("--lines at least 1000, --repeat 1 to 10, --targets 1 to 1000, --window and --scrape-interval above 0")
	}
	if ncpu := runtime.NumCPU(); o.agentCore >= ncpu || o.loadCore >= ncpu {
		return fmt.Errorf("cores %d and %d: this machine has %d", o.agentCore, o.loadCore, ncpu)
	}
	return nil
}

// runs says whether --only selects the cell or group name.
func (o *vmOptions) runs(names ...string) bool {
	if o.only == "" {
		return true
	}
	for _, n := range names {
		if contains(strings.Split(o.only, ","), n) {
			return true
		}
	}
	return false
}

// agentRunFigures is what one agent did in one cell.
type agentRunFigures struct {
	Lines           int64   `json:"lines,omitempty"`
	LinesPerSec     float64 `json:"lines_per_sec,omitempty"`
	Samples         int64   `json:"samples"`
	SamplesPerSec   float64 `json:"samples_per_sec"`
	CPUSec          float64 `json:"cpu_sec"`
	CPUMicrosSample float64 `json:"cpu_us_per_sample"`
	CPUMicrosLine   float64 `json:"cpu_us_per_line,omitempty"`
	PeakRSSMiB      float64 `json:"peak_rss_mib"`
	ForeignCPUPct   float64 `json:"foreign_cpu_pct"`
	LoadAvg1        float64 `json:"loadavg_1m"`
	Failed          int64   `json:"lines_failed,omitempty"`
	Error           string  `json:"error,omitempty"`
	// OtherRuns are the CPU per sample of the repeats not kept, with --repeat.
	OtherRuns []float64 `json:"other_runs_cpu_us_per_sample,omitempty"`
}

// vmCell is one cell of a benchmark: morse and vmagent on the same job.
type vmCell struct {
	Name            string          `json:"name"`
	Group           string          `json:"group"` // push or scrape
	Connections     int             `json:"connections,omitempty"`
	LinesPerRequest int             `json:"lines_per_request,omitempty"`
	Targets         int             `json:"targets,omitempty"`
	SeriesPerTarget int             `json:"series_per_target,omitempty"`
	Morse           agentRunFigures `json:"morse"`
	VMAgent         agentRunFigures `json:"vmagent"`
	// Ratio is morse's CPU per sample over vmagent's; Limit is the target.
	Ratio float64 `json:"ratio"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

// vmReport is everything `morse-bench vmagent` measured.
type vmReport struct {
	runInfo
	VMAgent         string    `json:"vmagent_version"`
	LinesPerCell    int64     `json:"lines_per_push_cell"`
	MorseBatch      int       `json:"morse_metric_batch_size"`
	CapturedSeries  int       `json:"node_exporter_captured_series,omitempty"`
	ScrapeInterval  string    `json:"scrape_interval,omitempty"`
	ScrapeWindow    string    `json:"scrape_window,omitempty"`
	Cells           []vmCell  `json:"cells"`
	Worst           []vmWorst `json:"worst"`
	LoadAvgAtFinish float64   `json:"loadavg_1m_at_finish"`
}

// vmWorst names the worst cell of a group against its target.
type vmWorst struct {
	Group string  `json:"group"`
	Cell  string  `json:"cell"`
	Ratio float64 `json:"ratio"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

// VMAgentMain runs `morse-bench vmagent` and returns its exit status: 2 for flags that
// cannot run, 1 when a cell could not be measured (or, with --strict, a target was missed).
func VMAgentMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseVMFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench vmagent: %v\n", err)
		return 2
	}
	rep, err := o.run(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench vmagent: %v\n", err)
		return 1
	}
	printVMReport(stdout, rep)
	eo := &options{out: o.out}
	if !eo.writeJSON(rep, stdout, stderr) {
		return 1
	}
	code := 0
	for _, c := range rep.Cells {
		if c.Morse.Error != "" || c.VMAgent.Error != "" {
			code = 1
		}
	}
	for _, w := range rep.Worst {
		if o.strict && !w.Met {
			code = 1
		}
	}
	return code
}

// run starts VictoriaMetrics on the load core and measures each cell selected.
func (o *vmOptions) run(ctx context.Context, stderr io.Writer) (*vmReport, error) {
	_, version, err := agentPlugins(o.morseBin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "morse-bench-vmagent-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if o.keep {
			fmt.Fprintf(stderr, "morse-bench: configs and logs are kept in %s\n", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	e := &env{morseBin: o.morseBin, loadBin: o.loadBin, dir: dir, agentCore: o.agentCore, loadCore: o.loadCore,
		duration: 5 * time.Minute, http: newHTTPClient()}
	defer e.http.CloseIdleConnections()
	vm, err := startVM(ctx, o.vmBin, dir, o.loadCore, e.http)
	if err != nil {
		return nil, err
	}
	defer func() { _, _, _ = vm.proc.Stop(30 * time.Second) }()
	info := (&options{agentCore: o.agentCore}).runInfo(version)
	rep := &vmReport{runInfo: info, VMAgent: vmVersion, LinesPerCell: o.lines, MorseBatch: o.batch}
	if err := o.runPush(ctx, e, vm, rep, stderr); err != nil {
		return nil, err
	}
	if o.runs("scrape") {
		if err := o.runScrape(ctx, e, vm, rep, stderr); err != nil {
			return nil, err
		}
	}
	rep.Worst = worstCells(rep.Cells)
	rep.LoadAvgAtFinish = loadAvg1()
	return rep, nil
}

// best runs one agent of a cell o.repeat times and keeps the run other processes disturbed
// least.
func (o *vmOptions) best(ctx context.Context, what string, stderr io.Writer, run func() agentRunFigures) agentRunFigures {
	var runs []agentRunFigures
	for i := range o.repeat {
		fmt.Fprintf(stderr, "morse-bench: %s (run %d of %d) ...\n", what, i+1, o.repeat)
		runs = append(runs, run())
		if ctx.Err() != nil {
			break
		}
	}
	bestIdx := 0
	for i, r := range runs {
		b := runs[bestIdx]
		if (b.Error != "" && r.Error == "") || (r.Error == "" && r.ForeignCPUPct < b.ForeignCPUPct) {
			bestIdx = i
		}
	}
	best := runs[bestIdx]
	for i, r := range runs {
		if i != bestIdx {
			best.OtherRuns = append(best.OtherRuns, r.CPUMicrosSample)
		}
	}
	return best
}

// judge sets the cell's ratio of CPU per sample and whether it meets limit.
func (c *vmCell) judge(limit float64) {
	c.Limit = limit
	if c.Morse.Error == "" && c.VMAgent.Error == "" && c.VMAgent.CPUMicrosSample > 0 {
		c.Ratio = c.Morse.CPUMicrosSample / c.VMAgent.CPUMicrosSample
		c.Met = c.Ratio <= limit
	}
}

// worstCells names, for each group, the cell with the highest ratio.
func worstCells(cells []vmCell) []vmWorst {
	var out []vmWorst
	for _, g := range []string{"push", "scrape"} {
		var w *vmWorst
		for _, c := range cells {
			if c.Group != g || c.Ratio == 0 {
				continue
			}
			if w == nil || c.Ratio > w.Ratio {
				w = &vmWorst{Group: g, Cell: c.Name, Ratio: c.Ratio, Limit: c.Limit, Met: c.Met}
			}
		}
		if w != nil {
			out = append(out, *w)
		}
	}
	return out
}
