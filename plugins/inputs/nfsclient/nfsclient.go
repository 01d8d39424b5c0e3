// Package nfsclient is the inputs.nfsclient plugin: the NFS client's statistics per mount
// from /proc/self/mountstats ($MOUNT_PROC when set, as in Telegraf), under Telegraf's
// measurements, tags and field types.
//
// Every NFS mount gets an nfsstat metric for READ and for WRITE (ops, retrans, bytes, rtt,
// exe unsigned; rtt_per_op a float). With fullstat, also nfs_events, nfs_bytes,
// nfs_xprt_tcp or nfs_xprt_udp, and nfs_ops per operation, all unsigned. As in Telegraf, the
// nfs_ops metrics of READ and WRITE also carry the nfsstat fields of that operation, and
// retrans is trans - ops in unsigned arithmetic.
package nfsclient

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read per-mount NFS client metrics from /proc/self/mountstats"

//go:embed sample.conf
var sampleConfig string

// NFSClient is the inputs.nfsclient plugin and its configuration.
type NFSClient struct {
	// Fullstat adds the events, bytes, transport and per-operation statistics.
	Fullstat bool `toml:"fullstat"`
	// IncludeMounts, when set, keeps only the mount points matching one of these Go regular
	// expressions; ExcludeMounts drops those matching one, and wins over IncludeMounts.
	IncludeMounts []string `toml:"include_mounts"`
	ExcludeMounts []string `toml:"exclude_mounts"`
	// IncludeOperations, when set, replaces the operations reported with fullstat;
	// ExcludeOperations removes operations from them.
	IncludeOperations []string `toml:"include_operations"`
	ExcludeOperations []string `toml:"exclude_operations"`

	log              *slog.Logger
	path             string
	include, exclude []*regexp.Regexp
	ops3, ops4       map[string]bool
}

var (
	_ morse.Input        = (*NFSClient)(nil)
	_ morse.Validator    = (*NFSClient)(nil)
	_ morse.Initializer  = (*NFSClient)(nil)
	_ morse.LoggerSetter = (*NFSClient)(nil)
)

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "nfsclient",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return &NFSClient{} },
	})
}

// SetLogger gives the plugin the engine's logger.
func (n *NFSClient) SetLogger(l *slog.Logger) { n.log = l }

// Validate reports every mount pattern that does not compile.
func (n *NFSClient) Validate() error {
	_, err1 := compile("include_mounts", n.IncludeMounts)
	_, err2 := compile("exclude_mounts", n.ExcludeMounts)
	return errors.Join(err1, err2)
}

func compile(key string, patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	var errs []error
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, morse.Errorf(key, "pattern %q: %w", p, err))
			continue
		}
		out = append(out, re)
	}
	return out, errors.Join(errs...)
}

// Init compiles the patterns and builds the operation lists.
func (n *NFSClient) Init() error {
	var err error
	if n.include, err = compile("include_mounts", n.IncludeMounts); err != nil {
		return err
	}
	if n.exclude, err = compile("exclude_mounts", n.ExcludeMounts); err != nil {
		return err
	}
	n.ops3, n.ops4 = opSet(nfs3Ops, n.IncludeOperations, n.ExcludeOperations), opSet(nfs4Ops, n.IncludeOperations, n.ExcludeOperations)
	n.path = "/proc/self/mountstats"
	if p := os.Getenv("MOUNT_PROC"); p != "" {
		n.path = p
	}
	if n.log != nil {
		n.log.Debug("reading mount statistics", "file", n.path)
	}
	return nil
}

func opSet(all, include, exclude []string) map[string]bool {
	if len(include) > 0 {
		all = include
	}
	set := make(map[string]bool, len(all))
	for _, op := range all {
		set[op] = true
	}
	for _, op := range exclude {
		delete(set, op)
	}
	return set
}

// Gather reads the file and reports every NFS mount it lists.
func (n *NFSClient) Gather(_ context.Context, acc morse.Accumulator) error {
	data, err := os.ReadFile(n.path)
	if err != nil {
		return fmt.Errorf("reading the mount statistics: %w", err)
	}
	return n.parse(data, acc, time.Now())
}

// mount is the NFS mount whose lines are being read.
type mount struct {
	point, export, version string
	skip                   bool
}

// parse walks the file. A "device ... with fstype nfs|nfs4" line starts a mount; the
// lines that follow belong to it until the next NFS mount (other mounts have one line,
// which names no statistic).
func (n *NFSClient) parse(data []byte, acc morse.Accumulator, now time.Time) error {
	var cur mount
	for raw := range bytes.Lines(data) {
		line := strings.Fields(string(raw))
		if len(line) == 0 {
			continue
		}
		if len(line) > 4 && slices.Contains(line, "fstype") && (slices.Contains(line, "nfs") || slices.Contains(line, "nfs4")) {
			cur = mount{point: line[4], export: line[1], version: cur.version}
			cur.skip = !n.wanted(cur.point)
		} else if len(line) > 5 && (slices.Contains(line, "(nfs)") || slices.Contains(line, "(nfs4)")) {
			if _, v, ok := strings.Cut(line[5], "/"); ok {
				cur.version = v
			}
		}
		if cur.point == "" || cur.skip {
			continue
		}
		if err := n.parseStat(cur, line, acc, now); err != nil {
			return fmt.Errorf("could not parseStat: %w", err)
		}
	}
	return nil
}

func (n *NFSClient) wanted(point string) bool {
	if len(n.include) > 0 && !slices.ContainsFunc(n.include, func(re *regexp.Regexp) bool { return re.MatchString(point) }) {
		return false
	}
	return !slices.ContainsFunc(n.exclude, func(re *regexp.Regexp) bool { return re.MatchString(point) })
}

// values parses the numbers after a line's first word. A word that is not a number counts
// as 0 (the "tcp" of xprt); one out of range fails the gather, as in Telegraf: the file is
// not what the plugin understands.
func values(line []string) ([]uint64, error) {
	out := make([]uint64, 0, len(line))
	for _, w := range line[1:] {
		v, err := strconv.ParseUint(w, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("value out of range in %v: %w", line, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (n *NFSClient) parseStat(m mount, line []string, acc morse.Accumulator, now time.Time) error {
	if len(line) < 2 {
		return nil
	}
	nums, err := values(line)
	if err != nil {
		return err
	}
	first := strings.Replace(line[0], ":", "", 1)
	tags := map[string]string{"mountpoint": m.point, "serverexport": m.export}
	fields := map[string]any{}
	if (first == "READ" || first == "WRITE") && len(nums) >= 8 {
		fields["ops"], fields["retrans"] = nums[0], nums[1]-nums[0]
		fields["bytes"], fields["rtt"], fields["exe"] = nums[3]+nums[4], nums[6], nums[7]
		perOp := 0.0
		if nums[0] > 0 {
			perOp = float64(nums[6]) / float64(nums[0])
		}
		fields["rtt_per_op"] = perOp
		tags["operation"] = first
		acc.AddFields("nfsstat", fields, tags, now)
	}
	if !n.Fullstat {
		return nil
	}
	switch first {
	case "events":
		addColumns(acc, "nfs_events", eventsFields, nums, tags, now)
	case "bytes":
		addColumns(acc, "nfs_bytes", bytesFields, nums, tags, now)
	case "xprt":
		// The transport's name, then its port, then the counters.
		if line[1] == "tcp" && len(nums) >= 2 {
			addColumns(acc, "nfs_xprt_tcp", xprtTCPFields, nums[2:], tags, now)
		} else if line[1] == "udp" && len(nums) >= 2 {
			addColumns(acc, "nfs_xprt_udp", xprtUDPFields, nums[2:], tags, now)
		}
	}
	if (m.version == "3" && n.ops3[first]) || (m.version == "4" && n.ops4[first]) {
		if len(nums) <= len(opFields) {
			tags["operation"] = first
			for i, v := range nums {
				fields[opFields[i]] = v
			}
			acc.AddFields("nfs_ops", fields, tags, now)
		}
	}
	return nil
}

// addColumns reports a line with at least as many values as names.
func addColumns(acc morse.Accumulator, name string, names []string, nums []uint64, tags map[string]string, now time.Time) {
	if len(nums) < len(names) {
		return
	}
	fields := make(map[string]any, len(names))
	for i, k := range names {
		fields[k] = nums[i]
	}
	acc.AddFields(name, fields, tags, now)
}
