// Package cpu is the inputs.cpu plugin. It reports CPU time counters and usage percentages
// under Telegraf's measurement, tag and field names, so that existing dashboards keep working.
//
// It differs from Telegraf in three deliberate ways.
//
// One metric per CPU. Telegraf emits the time_* counters and the usage_* percentages of a CPU
// as two metrics of the same series and timestamp. A time-series database stores them as one
// point either way, so morse emits one metric that carries both sets of fields. That halves
// what the plugin puts into every output buffer, whose limit counts metrics.
//
// Usage on the first gather. A percentage needs two samples, so Telegraf reports no usage on
// its first gather. morse takes the first sample in Init, which makes the first gather's
// interval the time since Init. A first gather soon after Init finds the kernel's tick
// counters (10 ms granularity) unmoved, or moved by a tick or two, which made usage 100% user
// or 100% idle. Waiting would delay every start, and reporting nothing would leave the first
// interval without cpu usage. So when the first gather finds no usable baseline for a CPU,
// less than minFirstWindow of CPU time since Init, it reports usage since boot: the delta
// from all-zero counters, which is the true average over the machine's uptime. Later
// gathers behave like Telegraf's. `morse --test`, as Telegraf's, gathers cpu twice, 500 ms
// apart, and prints the second (agent.Test).
//
// Counters that go backwards. After CPU hotplug, suspend or a VM migration the total time of a
// CPU can be lower than in the previous sample. Telegraf then ends the gather with an error
// and drops the remaining CPUs' metrics. morse skips usage only for the affected CPUs, reports
// one error naming them, and takes the new sample as the baseline for the next interval.
package cpu

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about cpu usage"

//go:embed sample.conf
var sampleConfig string

// TimesFunc reads CPU time counters in seconds: one entry per CPU (named "cpu0", "cpu1", …)
// when perCPU is true, else one entry named "cpu-total". gopsutil's cpu.TimesWithContext is
// the default; tests inject fixed samples.
type TimesFunc func(ctx context.Context, perCPU bool) ([]cpu.TimesStat, error)

// InfoFunc reads the identity of each CPU, for the core_id and physical_id tags. gopsutil's
// cpu.InfoWithContext is the default.
type InfoFunc func(ctx context.Context) ([]cpu.InfoStat, error)

// CPU is the inputs.cpu plugin and its configuration. Build it with New, which sets
// Telegraf's defaults, and call Init before the first Gather.
type CPU struct {
	// PerCPU reports one series per CPU.
	PerCPU bool `toml:"percpu"`
	// TotalCPU reports the "cpu-total" series that sums all CPUs.
	TotalCPU bool `toml:"totalcpu"`
	// CollectCPUTime adds the raw time_* counters.
	CollectCPUTime bool `toml:"collect_cpu_time"`
	// ReportActive adds time_active and usage_active: every state but idle, iowait included.
	ReportActive bool `toml:"report_active"`
	// CoreTags adds the core_id and physical_id tags where the system reports them.
	CoreTags bool `toml:"core_tags"`

	// Times replaces the source of CPU time counters; nil means the system's.
	Times TimesFunc `toml:"-"`
	// Info replaces the source of CPU identities; nil means the system's.
	Info InfoFunc `toml:"-"`

	mu       sync.Mutex
	log      *slog.Logger
	last     map[string]cpu.TimesStat // the previous sample of each CPU, by name
	gathered bool                     // whether a Gather has completed; before it, last comes from Init
	coreInfo map[string]cpu.InfoStat  // by CPU name; nil without core_tags
}

// The engine finds these optional interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*CPU)(nil)
	_ morse.Validator    = (*CPU)(nil)
	_ morse.Initializer  = (*CPU)(nil)
	_ morse.LoggerSetter = (*CPU)(nil)
)

// New returns the plugin with Telegraf's defaults: per-CPU and total series, usage only.
func New() *CPU {
	return &CPU{PerCPU: true, TotalCPU: true}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "cpu",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (c *CPU) SetLogger(l *slog.Logger) { c.log = l }

func (c *CPU) logger() *slog.Logger {
	if c.log == nil {
		return slog.Default()
	}
	return c.log
}

// Validate refuses a config that could never report anything.
func (c *CPU) Validate() error {
	if !c.PerCPU && !c.TotalCPU {
		return morse.Errorf("percpu", "percpu and totalcpu are both false, so the input would report nothing; enable at least one")
	}
	return nil
}

// Init reads the CPU identities for core_tags and takes the baseline sample that the first
// gather's usage is computed against. Neither failure stops the agent: without identities
// the tags are left out, as Telegraf does, and without a baseline the first gather reports
// usage since boot. Both are logged.
func (c *CPU) Init() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx := context.Background()
	if c.CoreTags {
		c.loadCoreInfo(ctx)
	}
	times, err := c.read(ctx)
	if err != nil {
		c.logger().Warn("cannot take the baseline cpu sample; the first gather will report usage since boot", "error", err)
		return nil
	}
	c.last = byName(times)
	return nil
}

func (c *CPU) loadCoreInfo(ctx context.Context) {
	info := c.Info
	if info == nil {
		info = cpu.InfoWithContext
	}
	infos, err := info(ctx)
	if err != nil {
		c.logger().Warn("core_tags is set but the CPU identities cannot be read; reporting without core_id and physical_id", "error", err)
		return
	}
	c.coreInfo = make(map[string]cpu.InfoStat, len(infos))
	for _, in := range infos {
		c.coreInfo["cpu"+strconv.Itoa(int(in.CPU))] = in
	}
}

// read takes one sample of the configured series: per-CPU entries first, then the total,
// the order Telegraf reports them in.
func (c *CPU) read(ctx context.Context) ([]cpu.TimesStat, error) {
	times := c.Times
	if times == nil {
		times = cpu.TimesWithContext
	}
	var out []cpu.TimesStat
	if c.PerCPU {
		t, err := times(ctx, true)
		if err != nil {
			return nil, err
		}
		out = append(out, t...)
	}
	if c.TotalCPU {
		t, err := times(ctx, false)
		if err != nil {
			return nil, err
		}
		out = append(out, t...)
	}
	return out, nil
}

// Gather reports one cpu metric per configured series. Counters that went backwards are
// reported through acc.AddError; only a failure to read the counters fails the gather.
func (c *CPU) Gather(ctx context.Context, acc morse.Accumulator) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	times, err := c.read(ctx)
	if err != nil {
		return fmt.Errorf("reading cpu times: %w", err)
	}
	now := time.Now()
	var backwards []string
	for _, cur := range times {
		fields := make([]morse.Field, 0, 22)
		if c.CollectCPUTime {
			fields = appendTimes(fields, cur, c.ReportActive)
		}
		prev, ok, wentBack := c.baseline(cur)
		if wentBack {
			backwards = append(backwards, cur.CPU)
		}
		if ok {
			fields = appendUsage(fields, cur, prev, c.ReportActive)
		}
		if len(fields) == 0 {
			continue
		}
		acc.AddMetric(morse.NewMetric("cpu", c.tags(cur.CPU), fields, now))
	}
	// Every CPU's new sample becomes its baseline, those that went backwards included:
	// their next interval is then measured from counters that are consistent again.
	c.last = byName(times)
	c.gathered = true
	if len(backwards) > 0 {
		acc.AddError(fmt.Errorf("current total CPU time is less than previous total CPU time for %s "+
			"(counters went backwards, as after CPU hotplug, suspend or a VM migration); usage skipped for this interval",
			strings.Join(backwards, ", ")))
	}
	return nil
}

// minFirstWindow is the least CPU time, in seconds, that the first gather's interval since
// Init must hold to be used. The kernel counts in ticks of 10 ms (USER_HZ), so a gather a few
// milliseconds after Init saw one or two ticks, and one tick made usage 100% user or 100%
// idle (about 3% of --test runs did). 0.5 s is 50 ticks, a resolution of 2%, and the
// 500 ms that Telegraf's --test waits between its two gathers of cpu.
const minFirstWindow = 0.5

// baseline picks the sample to compute cur's usage against. ok is false when usage must be
// skipped for this gather; backwards is true when that is because the counters went back.
func (c *CPU) baseline(cur cpu.TimesStat) (prev cpu.TimesStat, ok, backwards bool) {
	prev, have := c.last[cur.CPU]
	delta := totalTime(cur) - totalTime(prev)
	if !c.gathered && (!have || (delta >= 0 && delta < minFirstWindow)) {
		// First gather with no usable interval since Init: usage since boot, see the
		// package documentation. Zero counters are the state at boot.
		return cpu.TimesStat{CPU: cur.CPU}, totalTime(cur) > 0, false
	}
	switch {
	case !have:
		// A CPU that appeared since the last gather (hotplug): wait for a second sample,
		// as Telegraf does.
		return prev, false, false
	case delta < 0:
		return prev, false, true
	case delta == 0:
		return prev, false, false
	}
	return prev, true, false
}

// tags builds the tags of one series. core_id and physical_id are left out where they are
// unknown, such as on cpu-total: an empty tag value cannot be written to line protocol.
func (c *CPU) tags(name string) []morse.Tag {
	tags := make([]morse.Tag, 0, 3)
	tags = append(tags, morse.Tag{Key: "cpu", Value: name})
	if info, ok := c.coreInfo[name]; ok {
		if info.CoreID != "" {
			tags = append(tags, morse.Tag{Key: "core_id", Value: info.CoreID})
		}
		if info.PhysicalID != "" {
			tags = append(tags, morse.Tag{Key: "physical_id", Value: info.PhysicalID})
		}
	}
	return tags
}

func byName(times []cpu.TimesStat) map[string]cpu.TimesStat {
	m := make(map[string]cpu.TimesStat, len(times))
	for _, t := range times {
		m[t.CPU] = t
	}
	return m
}

// totalTime is Telegraf's total: guest and guest_nice are left out because the kernel
// already counts them in user and nice.
func totalTime(t cpu.TimesStat) float64 {
	return t.User + t.System + t.Nice + t.Iowait + t.Irq + t.Softirq + t.Steal + t.Idle
}

// activeTime is every state but idle. Like Telegraf's, it includes iowait.
func activeTime(t cpu.TimesStat) float64 {
	return totalTime(t) - t.Idle
}

func appendTimes(fs []morse.Field, t cpu.TimesStat, active bool) []morse.Field {
	fs = append(fs,
		morse.Field{Key: "time_user", Value: morse.Float(t.User)},
		morse.Field{Key: "time_system", Value: morse.Float(t.System)},
		morse.Field{Key: "time_idle", Value: morse.Float(t.Idle)},
		morse.Field{Key: "time_nice", Value: morse.Float(t.Nice)},
		morse.Field{Key: "time_iowait", Value: morse.Float(t.Iowait)},
		morse.Field{Key: "time_irq", Value: morse.Float(t.Irq)},
		morse.Field{Key: "time_softirq", Value: morse.Float(t.Softirq)},
		morse.Field{Key: "time_steal", Value: morse.Float(t.Steal)},
		morse.Field{Key: "time_guest", Value: morse.Float(t.Guest)},
		morse.Field{Key: "time_guest_nice", Value: morse.Float(t.GuestNice)},
	)
	if active {
		fs = append(fs, morse.Field{Key: "time_active", Value: morse.Float(activeTime(t))})
	}
	return fs
}

// appendUsage adds the usage percentages over the interval from prev to cur. The caller
// guarantees a positive total delta. The expressions are Telegraf's, term for term, so the
// results match Telegraf's to the last bit; user and nice exclude the guest time they contain.
func appendUsage(fs []morse.Field, cur, prev cpu.TimesStat, active bool) []morse.Field {
	d := totalTime(cur) - totalTime(prev)
	pct := func(delta float64) morse.Value { return morse.Float(100 * delta / d) }
	fs = append(fs,
		morse.Field{Key: "usage_user", Value: pct((cur.User - prev.User) - (cur.Guest - prev.Guest))},
		morse.Field{Key: "usage_system", Value: pct(cur.System - prev.System)},
		morse.Field{Key: "usage_idle", Value: pct(cur.Idle - prev.Idle)},
		morse.Field{Key: "usage_nice", Value: pct((cur.Nice - prev.Nice) - (cur.GuestNice - prev.GuestNice))},
		morse.Field{Key: "usage_iowait", Value: pct(cur.Iowait - prev.Iowait)},
		morse.Field{Key: "usage_irq", Value: pct(cur.Irq - prev.Irq)},
		morse.Field{Key: "usage_softirq", Value: pct(cur.Softirq - prev.Softirq)},
		morse.Field{Key: "usage_steal", Value: pct(cur.Steal - prev.Steal)},
		morse.Field{Key: "usage_guest", Value: pct(cur.Guest - prev.Guest)},
		morse.Field{Key: "usage_guest_nice", Value: pct(cur.GuestNice - prev.GuestNice)},
	)
	if active {
		fs = append(fs, morse.Field{Key: "usage_active", Value: pct(activeTime(cur) - activeTime(prev))})
	}
	return fs
}
