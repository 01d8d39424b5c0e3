// Package disk is the inputs.disk plugin. It reports the space and inodes of every mounted
// file system under Telegraf's measurement, tag and field names, with Telegraf's filters:
// mount_points, ignore_fs, ignore_mount_opts, autofs always skipped, and HOST_MOUNT_PREFIX
// for monitoring a host from a container. As in Telegraf, ignore_fs is empty unless the
// config sets it; the sample config sets Telegraf's list of in-memory and image file systems.
// The sizes and inode counts are unsigned (gopsutil's uint64, which Telegraf adds as they
// are), the percentages floats.
//
// used_percent is used / (used + free), not used / total: the blocks reserved for root are
// neither, so the percentage reaches 100 when an unprivileged writer runs out of space, as
// with df(1) and Telegraf.
package disk

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/disk"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about disk usage by mount point"

//go:embed sample.conf
var sampleConfig string

// Source reads the mounts and their usage. The zero value means the system's; tests inject
// fixed mounts.
type Source struct {
	// Partitions lists the mounts.
	Partitions func(ctx context.Context, all bool) ([]disk.PartitionStat, error)
	// Usage reads the space and inodes of a mounted file system.
	Usage func(ctx context.Context, path string) (*disk.UsageStat, error)
	// Getenv reads the environment, for HOST_MOUNT_PREFIX.
	Getenv func(key string) string
	// Label finds the label of a device (a device-mapper name or udev's ID_FS_LABEL).
	Label func(ctx context.Context, device string) (string, error)
}

// Disk is the inputs.disk plugin and its configuration. Build it with New.
type Disk struct {
	// MountPoints restricts the report to these mount points; empty means all.
	MountPoints []string `toml:"mount_points"`
	// IgnoreFS skips mounts of these file system types.
	IgnoreFS []string `toml:"ignore_fs"`
	// IgnoreMountOpts skips mounts that carry any of these options; "bind" marks bind mounts.
	IgnoreMountOpts []string `toml:"ignore_mount_opts"`
	// TraceFilters logs, at debug level, why each mount point was skipped.
	TraceFilters bool `toml:"trace_filters"`

	// Source replaces where mounts and usage come from; the zero value means the system's.
	Source Source `toml:"-"`

	log *slog.Logger
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Disk)(nil)
	_ morse.LoggerSetter = (*Disk)(nil)
)

// New returns the plugin with Telegraf's defaults: every mount point, no filters.
func New() *Disk {
	return &Disk{}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "disk",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (d *Disk) SetLogger(l *slog.Logger) { d.log = l }

func (d *Disk) logger() *slog.Logger {
	if d.log == nil {
		return slog.Default()
	}
	return d.log
}

func (d *Disk) source() Source {
	s := d.Source
	if s.Partitions == nil {
		s.Partitions = disk.PartitionsWithContext
	}
	if s.Usage == nil {
		s.Usage = disk.UsageWithContext
	}
	if s.Getenv == nil {
		s.Getenv = os.Getenv
	}
	if s.Label == nil {
		s.Label = disk.LabelWithContext
	}
	return s
}

// Gather reports one disk metric per mount point that passes the filters. A mount point
// whose usage cannot be read (gone, or not permitted) is skipped, as in Telegraf, so one
// stale network mount does not hide the others.
func (d *Disk) Gather(ctx context.Context, acc morse.Accumulator) error {
	src := d.source()
	parts, err := src.Partitions(ctx, true)
	if err != nil {
		return fmt.Errorf("error getting disk usage info: %w", err)
	}
	prefix := src.Getenv("HOST_MOUNT_PREFIX")
	paths := make(map[string]bool, len(parts))
	for _, p := range parts {
		paths[p.Mountpoint] = true
	}
	now := time.Now()
	for _, p := range parts {
		if reason := d.skip(p); reason != "" {
			d.trace(reason, p.Mountpoint)
			continue
		}
		// Inside a container the host's mounts are reached below the prefix; a mount that is
		// already below it is the container's own view and is left alone.
		mountpoint := p.Mountpoint
		if prefix != "" && !strings.HasPrefix(p.Mountpoint, prefix) {
			mountpoint = filepath.Join(prefix, p.Mountpoint)
			if paths[mountpoint] {
				d.trace("mount prefix conflict", mountpoint)
				continue
			}
		}
		du, err := src.Usage(ctx, mountpoint)
		if err != nil {
			d.trace(fmt.Sprintf("unable to get disk usage: %v", err), mountpoint)
			continue
		}
		// Pseudo file systems (proc, sysfs, cgroup, ...) report no blocks; they are skipped.
		if du.Total == 0 {
			continue
		}
		path := filepath.Join("/", strings.TrimPrefix(p.Mountpoint, prefix))
		acc.AddMetric(morse.NewMetric("disk", tags(ctx, src, p, path), fields(du), now))
	}
	return nil
}

// skip says why a mount is filtered out, or "" to keep it.
func (d *Disk) skip(p disk.PartitionStat) string {
	for _, o := range p.Opts {
		if slices.Contains(d.IgnoreMountOpts, o) {
			return "mount option " + o
		}
	}
	if len(d.MountPoints) > 0 && !slices.Contains(d.MountPoints, p.Mountpoint) {
		return "mount point not in mount_points"
	}
	// autofs entries are only potential mounts; asking them for usage would trigger the
	// mount, and the real file system is listed separately once mounted.
	if p.Fstype == "autofs" || slices.Contains(d.IgnoreFS, p.Fstype) {
		return "file system type " + p.Fstype
	}
	return ""
}

func (d *Disk) trace(reason, mountpoint string) {
	if d.TraceFilters {
		d.logger().Debug("mount point dropped", "mount_point", mountpoint, "reason", reason)
	}
}

// tags are Telegraf's: a mount without a device ("none", as tmpfs often has) is named by its
// file system type, and the label tag is there only for a device that has a label.
func tags(ctx context.Context, src Source, p disk.PartitionStat, path string) []morse.Tag {
	device := p.Device
	if device == "none" || device == "" {
		device = p.Fstype
	}
	tags := []morse.Tag{
		{Key: "device", Value: strings.ReplaceAll(device, "/dev/", "")},
		{Key: "fstype", Value: p.Fstype},
		{Key: "mode", Value: mode(p.Opts)},
		{Key: "path", Value: path},
	}
	if label, err := src.Label(ctx, strings.TrimPrefix(device, "/dev/")); err == nil && label != "" {
		tags = append(tags, morse.Tag{Key: "label", Value: label})
	}
	return tags
}

// mode is "rw" or "ro" from the mount options, "unknown" when neither is listed.
func mode(opts []string) string {
	switch {
	case slices.Contains(opts, "rw"):
		return "rw"
	case slices.Contains(opts, "ro"):
		return "ro"
	}
	return "unknown"
}

func fields(du *disk.UsageStat) []morse.Field {
	var usedPercent, inodesUsedPercent float64
	if du.Used+du.Free > 0 {
		usedPercent = float64(du.Used) / (float64(du.Used) + float64(du.Free)) * 100
	}
	if du.InodesUsed+du.InodesFree > 0 {
		inodesUsedPercent = float64(du.InodesUsed) / (float64(du.InodesUsed) + float64(du.InodesFree)) * 100
	}
	return []morse.Field{
		num("free", du.Free),
		num("inodes_free", du.InodesFree),
		num("inodes_total", du.InodesTotal),
		num("inodes_used", du.InodesUsed),
		{Key: "inodes_used_percent", Value: morse.Float(inodesUsedPercent)},
		num("total", du.Total),
		num("used", du.Used),
		{Key: "used_percent", Value: morse.Float(usedPercent)},
	}
}

// num makes an unsigned field, the type Telegraf emits for gopsutil's uint64 values. Outputs
// without uint support write it as a signed integer, clamped as Telegraf clamps it.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Uint(v)}
}
