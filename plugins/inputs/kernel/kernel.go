// Package kernel is the inputs.kernel plugin. It reports the Linux kernel's counters from
// /proc/stat, the available entropy, and on request Kernel Samepage Merging (ksm) and
// Pressure Stall Information (psi), under Telegraf's measurement, tag and field names.
//
// The counters are reported raw, as Telegraf does: rates are left to queries, which also
// handle the reset at reboot. Telegraf emits each pressure series as two metrics (the total
// counter and the averages) of one timestamp; morse emits one metric carrying both.
package kernel

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Plugin to collect various Linux kernel statistics."

//go:embed sample.conf
var sampleConfig string

// Paths are the files the plugin reads. The zero value means the system's; tests point
// them at fixtures.
type Paths struct {
	Stat     string // /proc/stat
	Entropy  string // /proc/sys/kernel/random/entropy_avail
	KSMDir   string // /sys/kernel/mm/ksm
	Pressure string // /proc/pressure
}

func (p Paths) withDefaults() Paths {
	if p.Stat == "" {
		p.Stat = "/proc/stat"
	}
	if p.Entropy == "" {
		p.Entropy = "/proc/sys/kernel/random/entropy_avail"
	}
	if p.KSMDir == "" {
		p.KSMDir = "/sys/kernel/mm/ksm"
	}
	if p.Pressure == "" {
		p.Pressure = "/proc/pressure"
	}
	return p
}

// Kernel is the inputs.kernel plugin and its configuration. Build it with New.
type Kernel struct {
	// Collect names the optional groups: "ksm" and "psi".
	Collect []string `toml:"collect"`

	// Paths replaces the files that are read; the zero value means the system's.
	Paths Paths `toml:"-"`

	log *slog.Logger
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Kernel)(nil)
	_ morse.Validator    = (*Kernel)(nil)
	_ morse.Initializer  = (*Kernel)(nil)
	_ morse.LoggerSetter = (*Kernel)(nil)
)

// New returns the plugin with Telegraf's defaults: the /proc/stat counters and entropy only.
func New() *Kernel { return &Kernel{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "kernel",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate refuses other platforms at config time.
func (k *Kernel) Validate() error {
	if runtime.GOOS != "linux" {
		return morse.Errorf("collect", "the kernel input supports Linux only, not %s", runtime.GOOS)
	}
	return nil
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (k *Kernel) SetLogger(l *slog.Logger) { k.log = l }

// Init checks that the requested groups exist in this kernel, as Telegraf does, so that a
// kernel without KSM or PSI fails at start rather than on every gather. Telegraf ignores a
// group it does not know, so a config with one still starts; morse warns once, so that an
// operator wondering where a misspelt ksm went finds out.
func (k *Kernel) Init() error {
	for _, c := range k.Collect {
		if c != "ksm" && c != "psi" {
			l := k.log
			if l == nil {
				l = slog.Default()
			}
			l.Warn("collect: unknown group has no effect; choose from \"ksm\" and \"psi\"", "group", c)
		}
	}
	p := k.Paths.withDefaults()
	if k.collects("ksm") {
		if _, err := os.Stat(p.KSMDir); err != nil {
			return fmt.Errorf("directory %q does not exist: KSM is not enabled in this kernel: %w", p.KSMDir, err)
		}
	}
	if k.collects("psi") {
		if _, err := os.Stat(p.Pressure); err != nil {
			return fmt.Errorf("directory %q does not exist: pressure stall information needs Linux 4.20 or later: %w", p.Pressure, err)
		}
	}
	return nil
}

func (k *Kernel) collects(group string) bool { return slices.Contains(k.Collect, group) }

// Gather reports the kernel metric and, with psi, the pressure metrics. Any file that
// cannot be read or parsed fails the gather, as in Telegraf.
func (k *Kernel) Gather(_ context.Context, acc morse.Accumulator) error {
	p := k.Paths.withDefaults()
	now := time.Now()
	fields, err := readStat(p.Stat)
	if err != nil {
		return err
	}
	entropy, err := readInt(p.Entropy)
	if err != nil {
		return err
	}
	fields = append(fields, morse.Field{Key: "entropy_avail", Value: morse.Int(entropy)})
	if k.collects("ksm") {
		if fields, err = appendKSM(fields, p.KSMDir); err != nil {
			return err
		}
	}
	// Alphabetical order, as Telegraf writes fields, makes lines easy to compare by eye.
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	acc.AddMetric(morse.NewMetric("kernel", nil, fields, now))
	if k.collects("psi") {
		return gatherPressure(acc, p.Pressure, now)
	}
	return nil
}

// statKeys maps the /proc/stat keywords to Telegraf's field names. "page" is the disk page
// line of kernels before 2.6, kept because Telegraf still reads it.
var statKeys = map[string]string{
	"intr":      "interrupts",
	"ctxt":      "context_switches",
	"processes": "processes_forked",
	"btime":     "boot_time",
}

// readStat reads the /proc/stat counters Telegraf reports.
func readStat(path string) ([]morse.Field, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	fields := make([]morse.Field, 0, 8)
	for line := range bytes.Lines(data) {
		words := strings.Fields(string(line))
		if len(words) < 2 {
			continue
		}
		if name, ok := statKeys[words[0]]; ok {
			v, err := strconv.ParseInt(words[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("parsing %q in %q: %w", words[0], path, err)
			}
			fields = append(fields, morse.Field{Key: name, Value: morse.Int(v)})
		}
		if words[0] == "page" && len(words) >= 3 {
			in, err1 := strconv.ParseInt(words[1], 10, 64)
			out, err2 := strconv.ParseInt(words[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("parsing \"page\" in %q: %w", path, err)
			}
			fields = append(fields, morse.Field{Key: "disk_pages_in", Value: morse.Int(in)},
				morse.Field{Key: "disk_pages_out", Value: morse.Int(out)})
		}
	}
	return fields, nil
}

// ksmStats are the files every KSM-enabled kernel has; ksmExtra exist only in recent
// kernels and are reported where present, as in Telegraf.
var (
	ksmStats = []string{
		"full_scans", "max_page_sharing", "merge_across_nodes", "pages_shared", "pages_sharing",
		"pages_to_scan", "pages_unshared", "pages_volatile", "run", "sleep_millisecs",
		"stable_node_chains", "stable_node_chains_prune_millisecs", "stable_node_dups", "use_zero_pages",
	}
	ksmExtra = []string{"general_profit"}
)

func appendKSM(fields []morse.Field, dir string) ([]morse.Field, error) {
	for _, name := range ksmStats {
		v, err := readInt(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		fields = append(fields, morse.Field{Key: "ksm_" + name, Value: morse.Int(v)})
	}
	for _, name := range ksmExtra {
		if v, err := readInt(filepath.Join(dir, name)); err == nil {
			fields = append(fields, morse.Field{Key: "ksm_" + name, Value: morse.Int(v)})
		}
	}
	return fields, nil
}

// readInt reads a file that holds one integer.
func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", path, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing %q: %w", path, err)
	}
	return v, nil
}
