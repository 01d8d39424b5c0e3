// Package procstat is the inputs.procstat plugin. It reports the resource usage of selected
// processes under Telegraf's measurement, tag and field names: procstat per process and
// procstat_lookup for each search. Processes are selected, as in Telegraf, by pid_file,
// exe, pattern, user, systemd_unit (with include_systemd_children) or cgroup, and found
// with the pgrep executable or natively.
//
// supervisor_units asks supervisorctl, as in Telegraf. Accepted with one warning at start,
// and no effect: win_service (Windows only), socket_protocols, the sockets property
// (procstat_socket) and the socket and filter-only tag_with values. The
// [[inputs.procstat.filter]] sections are refused with a clear error: without them such a
// config would watch nothing it meant to.
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
	// SupervisorUnits selects the children of Supervisor programs' main processes, see
	// supervisorGroups. SupervisorUnit is its deprecated spelling.
	SupervisorUnits []string `toml:"supervisor_units"`
	SupervisorUnit  []string `toml:"supervisor_unit"`
	// WinService selects a Windows service in Telegraf; accepted with a warning.
	WinService string `toml:"win_service"`
	// SocketProtocols filters the sockets property in Telegraf; accepted with a warning.
	SocketProtocols []string `toml:"socket_protocols"`
	// Filter holds Telegraf's [[inputs.procstat.filter]] sections, which morse refuses.
	Filter []map[string]any `toml:"filter"`

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

// tagWithSupported are the tag_with values morse implements; tagWithAccepted are the others
// Telegraf 1.39.3 accepts (socket tags, filter levels), which morse accepts with a warning.
var (
	tagWithSupported = []string{"cmdline", "pid", "ppid", "status", "user"}
	tagWithAccepted  = []string{"child_level", "parent_pid", "level", "protocol", "state", "src", "src_port", "dest", "dest_port", "name"}
)

// Validate checks the options as Telegraf's Init does, at config time.
func (p *Procstat) Validate() error {
	for _, t := range p.TagWith {
		if !slices.Contains(tagWithSupported, t) && !slices.Contains(tagWithAccepted, t) {
			return morse.Errorf("tag_with", "invalid 'tag_with' setting %q", t)
		}
	}
	for _, prop := range p.Properties {
		if !slices.Contains([]string{"cpu", "limits", "memory", "mmap", "sockets"}, prop) {
			return morse.Errorf("properties", "invalid 'properties' setting %q; choose from cpu, limits, memory, mmap, sockets", prop)
		}
	}
	for _, proto := range p.SocketProtocols {
		if !slices.Contains([]string{"all", "tcp4", "tcp6", "udp4", "udp6", "unix"}, proto) {
			return morse.Errorf("socket_protocols", "invalid 'socket_protocol' setting %q", proto)
		}
	}
	if len(p.Filter) > 0 {
		return morse.Errorf("filter", "[[inputs.procstat.filter]] sections are not supported by morse; "+
			"use one of pid_file, exe, pattern, user, systemd_unit or cgroup per [[inputs.procstat]]")
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

// supervisorUnits merges supervisor_units with its deprecated spelling, as Telegraf does.
func (p *Procstat) supervisorUnits() []string {
	out := slices.Clone(p.SupervisorUnits)
	for _, u := range p.SupervisorUnit {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// warnUnsupported logs, once at start, each accepted option that has no effect in morse.
func (p *Procstat) warnUnsupported() {
	l := p.log
	if l == nil {
		l = slog.Default()
	}
	if p.WinService != "" {
		l.Warn("win_service has no effect in morse: Windows services exist only on Windows, which morse does not run on; " +
			"this instance reports no processes")
	}
	if len(p.SocketProtocols) > 0 {
		l.Warn("socket_protocols has no effect in morse: the sockets property (procstat_socket) is not implemented")
	}
	if slices.Contains(p.Properties, "sockets") {
		l.Warn("properties: \"sockets\" has no effect in morse: procstat_socket is not implemented")
	}
	for _, t := range p.TagWith {
		if slices.Contains(tagWithAccepted, t) {
			l.Warn("tag_with: value has no effect in morse: it names socket or filter data that morse does not collect", "value", t)
		}
	}
}

// Init picks the finder. The pgrep finder needs pgrep in PATH, checked now as Telegraf
// does, so that a missing procps package fails at start and not on every gather.
func (p *Procstat) Init() error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.warnUnsupported()
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
	if units := p.supervisorUnits(); len(units) > 0 {
		lookupTags["supervisor_unit"] = strings.Join(units, ";")
	}
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
