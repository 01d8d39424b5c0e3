// Package conntrack is the inputs.conntrack plugin: the size of netfilter's connection
// tracking table from /proc/sys (the conntrack metric's ip_conntrack_* fields) and, with
// collect, the statistics of /proc/net/stat/nf_conntrack summed ("all") or per CPU
// ("percpu"), under Telegraf's names and types.
//
// As in Telegraf the table's files are parsed as floats and the statistics are unsigned,
// named by their column (gopsutil's names, which newer kernels have partly renamed:
// "searched" is clashres there, "delete_list" chainlength). Unlike Telegraf, the default
// dirs and the statistics file follow $HOST_PROC; Telegraf's default dirs ignore it.
package conntrack

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/hostfs"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Collects conntrack stats from the configured directories and files."

//go:embed sample.conf
var sampleConfig string

// Conntrack is the inputs.conntrack plugin and its configuration.
type Conntrack struct {
	// Collect names the statistics to report: "all" (summed, cpu=all) and "percpu".
	Collect []string `toml:"collect"`
	// Dirs are searched for Files; a missing one is skipped. Empty means
	// $HOST_PROC/sys/net/ipv4/netfilter and $HOST_PROC/sys/net/netfilter.
	Dirs []string `toml:"dirs"`
	// Files are the table's files to read; a field is named "ip_" and what follows the
	// file name's first underscore. Empty means the ip_ and nf_ count and max.
	Files []string `toml:"files"`
}

var (
	_ morse.Input       = (*Conntrack)(nil)
	_ morse.Validator   = (*Conntrack)(nil)
	_ morse.Initializer = (*Conntrack)(nil)
)

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "conntrack",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return &Conntrack{} },
	})
}

var defaultFiles = []string{"ip_conntrack_count", "ip_conntrack_max", "nf_conntrack_count", "nf_conntrack_max"}

// Validate refuses a collect value other than "all" and "percpu", as Telegraf's Init does.
func (c *Conntrack) Validate() error {
	var errs []error
	for _, v := range c.Collect {
		if v != "all" && v != "percpu" {
			errs = append(errs, morse.Errorf("collect", "unknown choice %q: choose from \"all\" and \"percpu\"", v))
		}
	}
	return errors.Join(errs...)
}

// Init fills in the default dirs and files.
func (c *Conntrack) Init() error {
	if len(c.Dirs) == 0 {
		c.Dirs = []string{hostfs.Proc("sys/net/ipv4/netfilter"), hostfs.Proc("sys/net/netfilter")}
	}
	if len(c.Files) == 0 {
		c.Files = defaultFiles
	}
	return nil
}

// Gather reports the statistics asked for and the table's size. A table of which no file
// exists fails the gather, as in Telegraf: the conntrack module is not loaded, or this
// network namespace has no table of its own.
func (c *Conntrack) Gather(_ context.Context, acc morse.Accumulator) error {
	now := time.Now()
	fields := c.tableFields(acc)
	for _, which := range c.Collect {
		c.gatherStats(acc, which == "percpu", now)
	}
	if len(fields) == 0 {
		return errors.New("conntrack input failed to collect metrics, make sure that the kernel module is loaded")
	}
	acc.AddMetric(morse.NewMetric("conntrack", nil, fields, now))
	return nil
}

// tableFields reads Files in Dirs. A value that does not parse is an error and left out
// (Telegraf reports the error and a 0).
func (c *Conntrack) tableFields(acc morse.Accumulator) []morse.Field {
	var fields []morse.Field
	for _, dir := range c.Dirs {
		for _, file := range c.Files {
			_, rest, ok := strings.Cut(file, "_")
			if !ok {
				continue
			}
			path := filepath.Join(dir, file)
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				acc.AddError(fmt.Errorf("failed to read file %q: %w", path, err))
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
			if err != nil {
				acc.AddError(fmt.Errorf("failed to parse %q, expected a number: %w", path, err))
				continue
			}
			key := "ip_" + rest
			// The same name in two dirs: the later one wins, as in Telegraf's map.
			fields = slices.DeleteFunc(fields, func(f morse.Field) bool { return f.Key == key })
			fields = append(fields, morse.Field{Key: key, Value: morse.Float(v)})
		}
	}
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	return fields
}

// statNames are the columns of /proc/net/stat/nf_conntrack as Telegraf names them.
var statNames = [17]string{"entries", "searched", "found", "new", "invalid", "ignore", "delete", "delete_list",
	"insert", "insert_failed", "drop", "early_drop", "icmp_error", "expect_new", "expect_create", "expect_delete",
	"search_restart"}

func (c *Conntrack) gatherStats(acc morse.Accumulator, perCPU bool, now time.Time) {
	path := hostfs.Proc("net/stat/nf_conntrack")
	rows, err := readStats(path)
	if err != nil {
		acc.AddError(fmt.Errorf("failed to retrieve conntrack statistics: %w", err))
	}
	if len(rows) == 0 {
		acc.AddError(errors.New("conntrack input failed to collect stats"))
		return
	}
	if !perCPU {
		var sum [17]uint64
		for _, r := range rows {
			for i, v := range r {
				sum[i] += v
			}
		}
		rows = [][17]uint64{sum}
	}
	for i, r := range rows {
		cpu := "all"
		if perCPU {
			cpu = "cpu" + strconv.Itoa(i)
		}
		fields := make([]morse.Field, 0, len(statNames))
		for j, name := range statNames {
			fields = append(fields, morse.Field{Key: name, Value: morse.Uint(r[j])})
		}
		slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
		acc.AddMetric(morse.NewMetric("conntrack", []morse.Tag{{Key: "cpu", Value: cpu}}, fields, now))
	}
}

// readStats parses the per-CPU rows of hexadecimal counters. Like gopsutil, it takes rows
// of exactly 17 columns and reads a value that does not parse as 0.
func readStats(path string) ([][17]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows [][17]uint64
	for line := range strings.Lines(string(data)) {
		words := strings.Fields(line)
		if len(words) != 17 || words[0] == "entries" {
			continue
		}
		var r [17]uint64
		for i, w := range words {
			r[i], _ = strconv.ParseUint(w, 16, 32)
		}
		rows = append(rows, r)
	}
	return rows, nil
}
