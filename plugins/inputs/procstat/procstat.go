// Package procstat is the inputs.procstat plugin. It reports the resource usage of selected
// processes under Telegraf's measurement, tag and field names: procstat per process and
// procstat_lookup for each search. Processes are selected, as in Telegraf, by pid_file,
// exe, pattern, user, systemd_unit (with include_systemd_children) or cgroup, and found
// with the pgrep executable or natively.
//
// Not implemented: supervisor_units, win_service, the sockets property (procstat_socket)
// and the [[inputs.procstat.filter]] sections; a config naming them is refused.
package procstat

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Monitor process cpu and memory usage"

//go:embed sample.conf
var sampleConfig string

// Procstat is the inputs.procstat plugin and its configuration. Build it with New.
type Procstat struct {
	// PidFinder is "pgrep" (the pgrep executable) or "native" (the process table).
	PidFinder string `toml:"pid_finder"`
	// PidFile selects the process whose PID the file holds.
	PidFile string `toml:"pid_file"`
	// Exe selects processes by name, a regular expression (pgrep PATTERN).
	Exe string `toml:"exe"`
	// Pattern selects processes by full command line, a regular expression (pgrep -f).
	Pattern string `toml:"pattern"`
	// User selects the processes of a user (pgrep -u).
	User string `toml:"user"`
	// SystemdUnit selects a unit's main process, or all its processes with
	// IncludeSystemdChildren.
	SystemdUnit string `toml:"systemd_unit"`
	// IncludeSystemdChildren selects every process of the unit's control group.
	IncludeSystemdChildren bool `toml:"include_systemd_children"`
	// CGroup selects the processes of control groups: a path or glob, absolute or
	// relative to /sys/fs/cgroup.
	CGroup string `toml:"cgroup"`
	// ProcessName overrides the process_name tag.
	ProcessName string `toml:"process_name"`
	// Prefix is put before the field names, with an underscore.
	Prefix string `toml:"prefix"`
	// Mode is "irix" (usage of one CPU, up to 100% per CPU) or "solaris" (divided by the
	// number of CPUs).
	Mode string `toml:"mode"`
	// TagWith makes cmdline, pid, ppid, status or user tags instead of fields.
	TagWith []string `toml:"tag_with"`
	// Properties selects the field groups: cpu, limits, memory, mmap.
	Properties []string `toml:"properties"`
	// PidTag is Telegraf's deprecated spelling of tag_with = ["pid"].
	PidTag bool `toml:"pid_tag"`
	// CmdLineTag is Telegraf's deprecated spelling of tag_with = ["cmdline"].
	CmdLineTag bool `toml:"cmdline_tag"`

	mu        sync.Mutex
	log       *slog.Logger
	finder    pidFinder
	processes map[int32]*proc
	// cgroupRoot is where relative cgroup names are looked up; tests replace it.
	cgroupRoot string
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Procstat)(nil)
	_ morse.Validator    = (*Procstat)(nil)
	_ morse.Initializer  = (*Procstat)(nil)
	_ morse.LoggerSetter = (*Procstat)(nil)
)

// New returns the plugin with Telegraf's defaults: pgrep, and the cpu, memory and mmap
// properties.
func New() *Procstat {
	return &Procstat{PidFinder: "pgrep", Mode: "irix", Properties: []string{"cpu", "memory", "mmap"}}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "procstat",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (p *Procstat) SetLogger(l *slog.Logger) { p.log = l }

// Validate checks the options as Telegraf's Init does, at config time.
func (p *Procstat) Validate() error {
	for _, t := range p.TagWith {
		if !slices.Contains([]string{"cmdline", "pid", "ppid", "status", "user"}, t) {
			return morse.Errorf("tag_with", "invalid 'tag_with' setting %q; choose from cmdline, pid, ppid, status, user", t)
		}
	}
	for _, prop := range p.Properties {
		switch prop {
		case "cpu", "limits", "memory", "mmap":
		case "sockets":
			return morse.Errorf("properties", "the sockets property (procstat_socket) is not supported by morse")
		default:
			return morse.Errorf("properties", "invalid 'properties' setting %q; choose from cpu, limits, memory, mmap", prop)
		}
	}
	switch p.PidFinder {
	case "", "pgrep", "native":
	default:
		return morse.Errorf("pid_finder", "unknown pid_finder %q; use \"pgrep\" or \"native\"", p.PidFinder)
	}
	if m := strings.ToLower(p.Mode); m != "" && m != "irix" && m != "solaris" {
		return morse.Errorf("mode", "unknown mode %q; use \"irix\" or \"solaris\"", p.Mode)
	}
	return nil
}

// Init picks the finder. The pgrep finder needs pgrep in PATH, checked now as Telegraf
// does, so that a missing procps package fails at start and not on every gather.
func (p *Procstat) Init() error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.PidFinder == "" {
		p.PidFinder = "pgrep"
	}
	if p.PidFinder == "native" {
		p.finder = nativeFinder{}
	} else {
		path, err := exec.LookPath("pgrep")
		if err != nil {
			return fmt.Errorf("creating pgrep finder failed: %w", err)
		}
		p.finder = pgrepFinder{path: path}
	}
	p.processes = map[int32]*proc{}
	return nil
}

func (p *Procstat) tagged(name string) bool {
	return slices.Contains(p.TagWith, name) || (name == "pid" && p.PidTag) || (name == "cmdline" && p.CmdLineTag)
}

// Gather reports one procstat metric per running process that the selector finds and one
// procstat_lookup metric. A failed search reports procstat_lookup with result=lookup_error
// and fails the gather, as in Telegraf.
func (p *Procstat) Gather(ctx context.Context, acc morse.Accumulator) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finder == nil {
		if err := p.Init(); err != nil {
			return err
		}
	}
	now := time.Now()
	groups, err := p.find(ctx)
	lookupTags := map[string]string{"pid_finder": p.PidFinder}
	for _, g := range groups {
		for k, v := range g.tags {
			lookupTags[k] = v
		}
	}
	if err != nil {
		lookupTags["result"] = "lookup_error"
		acc.AddFields("procstat_lookup", map[string]any{"pid_count": 0, "running": 0, "result_code": 1}, lookupTags, now)
		return err
	}
	count, running := 0, map[int32]bool{}
	for _, g := range groups {
		count += len(g.pids)
		for _, pid := range g.pids {
			if p.gatherProcess(ctx, acc, pid, g.tags, now) {
				running[pid] = true
			}
		}
	}
	// Forget processes that ended, so that a new process with a reused PID starts afresh.
	for pid := range p.processes {
		if !running[pid] {
			delete(p.processes, pid)
		}
	}
	lookupTags["result"] = "success"
	acc.AddFields("procstat_lookup", map[string]any{"pid_count": count, "running": len(running), "result_code": 0}, lookupTags, now)
	return nil
}

// gatherProcess reports one process and says whether it is running. The process is kept
// between gathers, as its CPU usage is computed from the previous sample.
func (p *Procstat) gatherProcess(ctx context.Context, acc morse.Accumulator, pid int32, tags map[string]string, now time.Time) bool {
	pr, ok := p.processes[pid]
	if !ok {
		gp, err := process.NewProcessWithContext(ctx, pid)
		if err != nil {
			// Ended since it was found, or a stale PID file: not running, not an error.
			return false
		}
		if name, _ := gp.NameWithContext(ctx); name == "" {
			return false
		}
		pr = &proc{Process: gp, tags: map[string]string{}}
		for k, v := range tags {
			pr.tags[k] = v
		}
		if p.ProcessName != "" {
			pr.tags["process_name"] = p.ProcessName
		}
		p.processes[pid] = pr
	}
	acc.AddMetric(pr.metric(ctx, p, now))
	return true
}
