// Package diskio is the inputs.diskio plugin. It reports the I/O counters of every block
// device from /proc/diskstats under Telegraf's measurement, tag and field names, with
// Telegraf's options: devices (names, globs or /dev/disk/by-* links), skip_serial_number,
// device_tags and name_templates from udev, and the io_await, io_svctm and io_util fields
// computed between two gathers.
//
// The counters are reported raw, as Telegraf does: they wrap or reset (device re-attached,
// reboot) and rates are left to queries. Across such a wrap the derived io_* fields are left
// out for one gather rather than computed from a negative delta.
package diskio

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/disk"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about disk IO by device"

//go:embed sample.conf
var sampleConfig string

// IOCountersFunc reads the counters of the named devices, or of all devices when none are
// named. gopsutil's disk.IOCountersWithContext is the default; tests inject fixed counters.
type IOCountersFunc func(ctx context.Context, names ...string) (map[string]disk.IOCountersStat, error)

// DiskIO is the inputs.diskio plugin and its configuration. Build it with New.
type DiskIO struct {
	// Devices restricts the report to these devices: names, globs or /dev links.
	Devices []string `toml:"devices"`
	// SkipSerialNumber leaves out the serial tag. Telegraf's default is true.
	SkipSerialNumber bool `toml:"skip_serial_number"`
	// DeviceTags names udev properties to add as tags.
	DeviceTags []string `toml:"device_tags"`
	// NameTemplates are tried in order to build the name tag from udev properties.
	NameTemplates []string `toml:"name_templates"`

	// IOCounters replaces the source of counters; nil means the system's.
	IOCounters IOCountersFunc `toml:"-"`
	// Paths replaces the /dev, /run and /sys directories; the zero value means the system's.
	Paths Paths `toml:"-"`

	mu          sync.Mutex
	now         func() time.Time // the clock; nil means time.Now, tests move it
	log         *slog.Logger
	udev        *udev
	last        map[string]disk.IOCountersStat
	lastTime    time.Time
	warnedNames map[string]bool
	warnedTags  map[string]bool
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*DiskIO)(nil)
	_ morse.Validator    = (*DiskIO)(nil)
	_ morse.LoggerSetter = (*DiskIO)(nil)
)

// New returns the plugin with Telegraf's defaults: all devices, no serial numbers.
func New() *DiskIO { return &DiskIO{SkipSerialNumber: true} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "diskio",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (d *DiskIO) SetLogger(l *slog.Logger) { d.log = l }

func (d *DiskIO) logger() *slog.Logger {
	if d.log == nil {
		return slog.Default()
	}
	return d.log
}

// Validate refuses device patterns that can never match.
func (d *DiskIO) Validate() error {
	for _, dev := range d.Devices {
		if _, err := path.Match(dev, ""); err != nil {
			return morse.Errorf("devices", "invalid pattern %q: %v", dev, err)
		}
	}
	return nil
}

// hasMeta reports whether a device pattern is a glob rather than a name.
func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

func (d *DiskIO) globbing() bool { return slices.ContainsFunc(d.Devices, hasMeta) }

// Gather reports one diskio metric per device.
func (d *DiskIO) Gather(ctx context.Context, acc morse.Accumulator) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.udev == nil {
		d.udev = newUdev(d.Paths)
		d.warnedNames, d.warnedTags = map[string]bool{}, map[string]bool{}
	}
	// With globs every device is read and filtered here; with plain names the kernel's
	// list is narrowed to them, after resolving /dev links to the device they point to.
	var names []string
	if !d.globbing() {
		for _, dev := range d.Devices {
			names = append(names, d.udev.resolve(dev))
		}
	}
	read := d.IOCounters
	if read == nil {
		read = disk.IOCountersWithContext
	}
	counters, err := read(ctx, names...)
	if err != nil {
		return fmt.Errorf("error getting disk io info: %w", err)
	}
	now := time.Now()
	if d.now != nil {
		now = d.now()
	}
	keys := make([]string, 0, len(counters))
	for k := range counters {
		keys = append(keys, k)
	}
	// Sorted by device, so that two gathers list the devices in the same order.
	slices.Sort(keys)
	for _, k := range keys {
		io := counters[k]
		tags, ok := d.tags(io)
		if !ok {
			continue
		}
		fields := countersFields(io)
		if prev, ok := d.last[k]; ok {
			fields = append(fields, derived(io, prev, now.Sub(d.lastTime))...)
		}
		acc.AddMetric(morse.NewMetric("diskio", tags, fields, now))
	}
	d.last, d.lastTime = counters, now
	return nil
}

// tags builds the tags of one device and reports false when the device filter drops it.
func (d *DiskIO) tags(io disk.IOCountersStat) ([]morse.Tag, bool) {
	info, err := d.udev.info(io.Name)
	if err != nil && (len(d.NameTemplates) > 0 || len(d.DeviceTags) > 0) && !d.warnedNames[io.Name] {
		d.warnedNames[io.Name] = true
		d.logger().Warn("unable to gather disk name and tags", "device", io.Name, "error", err)
	}
	if d.globbing() && !d.matches(io.Name, devLinks(info)) {
		return nil, false
	}
	name := io.Name
	if err == nil {
		name = nameFromTemplates(d.NameTemplates, info, io.Name)
	}
	tags := []morse.Tag{{Key: "name", Value: name}}
	if wwid := d.udev.wwid(io.Name); wwid != "" {
		tags = append(tags, morse.Tag{Key: "wwid", Value: wwid})
	}
	for _, key := range d.DeviceTags {
		if v, ok := info[key]; ok && v != "" {
			tags = append(tags, morse.Tag{Key: key, Value: v})
		}
	}
	if !d.SkipSerialNumber {
		serial := strings.TrimSpace(strings.NewReplacer("\n", "", "\r", "").Replace(io.SerialNumber))
		if serial == "" {
			serial = "unknown"
		}
		tags = append(tags, morse.Tag{Key: "serial", Value: serial})
	}
	return tags, true
}

// matches applies the device globs to the kernel name and to its /dev links.
func (d *DiskIO) matches(name string, links []string) bool {
	for _, pattern := range d.Devices {
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
		for _, l := range links {
			if ok, _ := path.Match(pattern, l); ok {
				return true
			}
		}
	}
	return false
}

func countersFields(io disk.IOCountersStat) []morse.Field {
	return []morse.Field{
		num("io_time", io.IoTime),
		num("iops_in_progress", io.IopsInProgress),
		num("merged_reads", io.MergedReadCount),
		num("merged_writes", io.MergedWriteCount),
		num("read_bytes", io.ReadBytes),
		num("read_time", io.ReadTime),
		num("reads", io.ReadCount),
		num("weighted_io_time", io.WeightedIO),
		num("write_bytes", io.WriteBytes),
		num("write_time", io.WriteTime),
		num("writes", io.WriteCount),
	}
}

// derived computes Telegraf's io_await and io_svctm (milliseconds per completed request)
// and io_util (percent of the interval the device was busy). A counter that went back means
// a wrap or a reset; nothing is derived from it.
func derived(cur, prev disk.IOCountersStat, interval time.Duration) []morse.Field {
	if cur.ReadCount < prev.ReadCount || cur.WriteCount < prev.WriteCount ||
		cur.ReadTime < prev.ReadTime || cur.WriteTime < prev.WriteTime || cur.IoTime < prev.IoTime {
		return nil
	}
	var out []morse.Field
	rwCount := float64(cur.ReadCount-prev.ReadCount) + float64(cur.WriteCount-prev.WriteCount)
	rwTime := float64(cur.ReadTime-prev.ReadTime) + float64(cur.WriteTime-prev.WriteTime)
	ioTime := float64(cur.IoTime - prev.IoTime)
	if rwCount > 0 {
		out = append(out,
			morse.Field{Key: "io_await", Value: morse.Float(rwTime / rwCount)},
			morse.Field{Key: "io_svctm", Value: morse.Float(ioTime / rwCount)})
	}
	if ms := float64(interval.Milliseconds()); ms > 0 {
		out = append(out, morse.Field{Key: "io_util", Value: morse.Float(100 * ioTime / ms)})
	}
	return out
}

// num makes an unsigned field, the type Telegraf emits for gopsutil's uint64 counters.
// Outputs without uint support write it as a signed integer, clamped as Telegraf clamps it.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Uint(v)}
}
