package procstat

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/morse-agent/morse"
)

// proc is a process followed across gathers; its gopsutil Process keeps the previous CPU
// sample that cpu_usage is computed from.
type proc struct {
	*process.Process
	tags       map[string]string
	hasCPUTime bool
}

// fields collects one metric's fields; each adder skips what cannot be read, as Telegraf
// does, since processes differ in what they let another user see.
type fields struct {
	prefix string
	list   []morse.Field
}

func (f *fields) add(key string, v morse.Value) {
	f.list = append(f.list, morse.Field{Key: f.prefix + key, Value: v})
}

// num adds an unsigned counter, the type Telegraf emits for gopsutil's uint64 values. An
// output without uint support writes it clamped at the int64 maximum, as Telegraf does:
// RLIM_INFINITY becomes 9223372036854775807 there.
func (f *fields) num(key string, v uint64) { f.add(key, morse.Uint(v)) }

func (f *fields) int(key string, v int64) { f.add(key, morse.Int(v)) }

// metric builds the procstat metric of the process.
func (pr *proc) metric(ctx context.Context, cfg *Procstat, now time.Time) morse.Metric {
	f := &fields{prefix: cfg.Prefix}
	if f.prefix != "" {
		f.prefix += "_"
	}
	pr.addCounters(ctx, f)
	has := func(p string) bool { return slices.Contains(cfg.Properties, p) }
	if has("cpu") {
		pr.addCPU(ctx, f, strings.EqualFold(cfg.Mode, "solaris"))
	}
	if has("memory") {
		pr.addMemory(ctx, f)
	}
	if has("mmap") {
		pr.addMemoryMaps(ctx, f)
	}
	if has("limits") {
		pr.addLimits(ctx, f)
	}
	tags := pr.addIdentity(ctx, f, cfg)
	// The last value of a key wins, as with Telegraf's field map: the limits' usage values
	// replace memory_rss, memory_vms and num_fds read a moment earlier.
	out := make([]morse.Field, 0, len(f.list))
	seen := map[string]int{}
	for _, fl := range f.list {
		if i, ok := seen[fl.Key]; ok {
			out[i] = fl
			continue
		}
		seen[fl.Key] = len(out)
		out = append(out, fl)
	}
	slices.SortFunc(out, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	return morse.NewMetric("procstat", tags, out, now)
}

func (pr *proc) addCounters(ctx context.Context, f *fields) {
	if n, err := pr.NumThreadsWithContext(ctx); err == nil {
		f.int("num_threads", int64(n))
	}
	if n, err := pr.NumFDsWithContext(ctx); err == nil {
		f.int("num_fds", int64(n))
	}
	if c, err := pr.NumCtxSwitchesWithContext(ctx); err == nil {
		f.int("voluntary_context_switches", c.Voluntary)
		f.int("involuntary_context_switches", c.Involuntary)
	}
	if pf, err := pr.PageFaultsWithContext(ctx); err == nil {
		f.num("minor_faults", pf.MinorFaults)
		f.num("major_faults", pf.MajorFaults)
		f.num("child_minor_faults", pf.ChildMinorFaults)
		f.num("child_major_faults", pf.ChildMajorFaults)
	}
	io, err := pr.IOCountersWithContext(ctx)
	if err == nil {
		f.num("read_count", io.ReadCount)
		f.num("write_count", io.WriteCount)
		f.num("read_bytes", io.ReadBytes)
		f.num("write_bytes", io.WriteBytes)
	}
	// On Linux gopsutil's bytes are those that reached the disk; Telegraf reports all I/O
	// (rchar, wchar) as read_bytes and write_bytes and the disk's as disk_*_bytes.
	if rc, wc, ok := totalReadWrite(pr.Pid); ok && err == nil {
		f.num("read_bytes", rc)
		f.num("write_bytes", wc)
		f.num("disk_read_bytes", io.ReadBytes)
		f.num("disk_write_bytes", io.WriteBytes)
	}
	if ms, err := pr.CreateTimeWithContext(ctx); err == nil {
		f.int("created_at", ms*int64(time.Millisecond))
	}
}

func (pr *proc) addCPU(ctx context.Context, f *fields, solaris bool) {
	if t, err := pr.TimesWithContext(ctx); err == nil {
		f.add("cpu_time_user", morse.Float(t.User))
		f.add("cpu_time_system", morse.Float(t.System))
		f.add("cpu_time_iowait", morse.Float(t.Iowait))
	}
	pct, err := pr.PercentWithContext(ctx, 0)
	if err != nil {
		return
	}
	// The first sample only sets the baseline: no usage yet, as in Telegraf.
	if !pr.hasCPUTime {
		pr.hasCPUTime = true
		return
	}
	if solaris {
		pct /= float64(runtime.NumCPU())
	}
	f.add("cpu_usage", morse.Float(pct))
}

func (pr *proc) addMemory(ctx context.Context, f *fields) {
	if m, err := pr.MemoryInfoWithContext(ctx); err == nil {
		f.num("memory_rss", m.RSS)
		f.num("memory_vms", m.VMS)
	}
	if pct, err := pr.MemoryPercentWithContext(ctx); err == nil {
		f.add("memory_usage", morse.Float(float64(pct)))
	}
}

// limitNames are Telegraf's names of the resource limits it reports.
var limitNames = map[int32]string{
	process.RLIMIT_CPU: "cpu_time", process.RLIMIT_DATA: "memory_data", process.RLIMIT_STACK: "memory_stack",
	process.RLIMIT_RSS: "memory_rss", process.RLIMIT_NOFILE: "num_fds", process.RLIMIT_MEMLOCK: "memory_locked",
	process.RLIMIT_AS: "memory_vms", process.RLIMIT_LOCKS: "file_locks", process.RLIMIT_SIGPENDING: "signals_pending",
	process.RLIMIT_NICE: "nice_priority", process.RLIMIT_RTPRIO: "realtime_priority",
}

func (pr *proc) addLimits(ctx context.Context, f *fields) {
	limits, err := pr.RlimitUsageWithContext(ctx, true)
	if err != nil {
		return
	}
	for _, l := range limits {
		name, ok := limitNames[l.Resource]
		if !ok {
			continue
		}
		f.num("rlimit_"+name+"_soft", l.Soft)
		f.num("rlimit_"+name+"_hard", l.Hard)
		// gopsutil does not count the file locks in use.
		if name != "file_locks" {
			f.num(name, l.Used)
		}
	}
}

// addIdentity adds pid, ppid, status, user and cmdline as fields, or as tags where
// tag_with asks for it, and returns the tags.
func (pr *proc) addIdentity(ctx context.Context, f *fields, cfg *Procstat) []morse.Tag {
	tags := make([]morse.Tag, 0, len(pr.tags)+4)
	for k, v := range pr.tags {
		tags = append(tags, morse.Tag{Key: k, Value: v})
	}
	either := func(name, value string, field morse.Value, prefixed bool) {
		switch {
		case cfg.tagged(name):
			tags = append(tags, morse.Tag{Key: name, Value: value})
		case prefixed:
			f.add(name, field)
		default:
			// Telegraf writes the pid field without the prefix.
			f.list = append(f.list, morse.Field{Key: name, Value: field})
		}
	}
	if cmd, err := pr.CmdlineWithContext(ctx); err == nil {
		either("cmdline", cmd, morse.String(cmd), true)
	}
	either("pid", strconv.Itoa(int(pr.Pid)), morse.Int(int64(pr.Pid)), false)
	if ppid, err := pr.PpidWithContext(ctx); err == nil {
		either("ppid", strconv.Itoa(int(ppid)), morse.Int(int64(ppid)), true)
	}
	if st, err := pr.StatusWithContext(ctx); err == nil && len(st) > 0 {
		either("status", st[0], morse.String(st[0]), true)
	}
	if user, err := pr.UsernameWithContext(ctx); err == nil {
		either("user", user, morse.String(user), true)
	}
	if _, ok := pr.tags["process_name"]; !ok {
		if name, err := pr.NameWithContext(ctx); err == nil {
			tags = append(tags, morse.Tag{Key: "process_name", Value: name})
		}
	}
	return tags
}

// totalReadWrite reads rchar and wchar, all bytes read and written, from /proc/PID/io.
func totalReadWrite(pid int32) (r, w uint64, ok bool) {
	if runtime.GOOS != "linux" {
		return 0, 0, false
	}
	file, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, false
	}
	defer file.Close()
	var gotR, gotW bool
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), ": ")
		if !found {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
		case k == "rchar":
			r, gotR = n, true
		case k == "wchar":
			w, gotW = n, true
		}
	}
	return r, w, gotR && gotW
}
