// Package processes is the inputs.processes plugin. It counts the processes by state under
// Telegraf's measurement and field names: on Linux from /proc/<pid>/stat, elsewhere from
// `ps axo state`.
//
// One deliberate difference: Telegraf's Linux code sets parked to 1 whenever it meets a parked
// process, whatever their number. morse counts them.
package processes

import (
	"context"
	_ "embed"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Get the number of processes and group them by status"

//go:embed sample.conf
var sampleConfig string

// Processes is the inputs.processes plugin and its configuration. Build it with New.
type Processes struct {
	// UseSudo runs ps through sudo (doas on OpenBSD) where ps is used; not on Linux.
	UseSudo bool `toml:"use_sudo"`

	// ProcDir is the proc file system to read on Linux. Empty means $HOST_PROC, as in
	// Telegraf, or /proc.
	ProcDir string `toml:"-"`

	log  *slog.Logger
	goos string
	// ps runs `ps axo state`; tests replace it.
	ps func(ctx context.Context, sudo bool) ([]byte, error)
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Processes)(nil)
	_ morse.Validator    = (*Processes)(nil)
	_ morse.LoggerSetter = (*Processes)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Processes { return &Processes{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "processes",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (p *Processes) SetLogger(l *slog.Logger) { p.log = l }

func (p *Processes) logger() *slog.Logger {
	if p.log == nil {
		return slog.Default()
	}
	return p.log
}

// Validate refuses Windows, which Telegraf does not support either.
func (p *Processes) Validate() error {
	if p.platform() == "windows" {
		return morse.Errorf("use_sudo", "the processes input does not support Windows")
	}
	return nil
}

func (p *Processes) platform() string {
	if p.goos == "" {
		return runtime.GOOS
	}
	return p.goos
}

// counts holds the fields of one gather by name.
type counts map[string]int64

// emptyCounts lists the fields each platform always reports, zero or not.
func emptyCounts(goos string) counts {
	c := counts{"blocked": 0, "zombies": 0, "stopped": 0, "running": 0, "sleeping": 0, "total": 0, "unknown": 0}
	switch goos {
	case "freebsd":
		c["idle"], c["wait"] = 0, 0
	case "darwin", "openbsd":
		c["idle"] = 0
	case "linux":
		c["dead"], c["paging"], c["total_threads"], c["idle"] = 0, 0, 0, 0
	}
	return c
}

// Gather reports one processes metric.
func (p *Processes) Gather(ctx context.Context, acc morse.Accumulator) error {
	c := emptyCounts(p.platform())
	var err error
	if p.platform() == "linux" {
		err = p.fromProc(c)
	} else {
		err = p.fromPS(ctx, c)
	}
	if err != nil {
		return err
	}
	fields := make([]morse.Field, 0, len(c))
	for k, v := range c {
		fields = append(fields, morse.Field{Key: k, Value: morse.Int(v)})
	}
	// Alphabetical order, as Telegraf writes fields, makes lines easy to compare by eye.
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	acc.AddMetric(morse.NewMetric("processes", nil, fields, time.Now()))
	return nil
}
