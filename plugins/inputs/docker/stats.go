package docker

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// addStats adds a container's docker_container_mem, _cpu, _net and _blkio metrics from
// one sample, whose PreCPU holds the sample to compare the CPU usage with.
func (d *Docker) addStats(acc morse.Accumulator, id string, st *containerStats, tags []morse.Tag, ts time.Time) {
	cid := morse.Field{Key: "container_id", Value: morse.String(id)}
	acc.AddMetric(morse.NewMetric("docker_container_mem", tags, memFields(st, cid), ts))
	d.addCPU(acc, st, cid, tags, ts)
	d.addNet(acc, st, cid, tags, ts)
	d.addBlkio(acc, st, cid, tags, ts)
}

// memFields are docker_container_mem's fields. usage leaves out the page cache, as the
// Docker CLI does: on cgroup v1 what "cache" (or, on a newer daemon, total_inactive_file)
// says, on cgroup v2 inactive_file.
func memFields(st *containerStats, cid morse.Field) []morse.Field {
	m := &st.Memory
	list := m.Stats.list()
	fields := make([]morse.Field, 0, len(list)+6)
	for _, kv := range list {
		if kv.v.ok {
			fields = append(fields, morse.Field{Key: kv.key, Value: morse.Uint(kv.v.v)})
		}
	}
	fields = append(fields, cid)
	if m.Failcnt != 0 {
		fields = append(fields, morse.Field{Key: "fail_count", Value: morse.Uint(m.Failcnt)})
	}
	if st.OSType == "windows" {
		return append(fields,
			morse.Field{Key: "commit_bytes", Value: morse.Uint(m.Commit)},
			morse.Field{Key: "commit_peak_bytes", Value: morse.Uint(m.CommitPeak)},
			morse.Field{Key: "private_working_set", Value: morse.Uint(m.PrivateWorkingSet)})
	}
	usage := m.Usage
	switch s := &m.Stats; {
	case s.Cache.ok && s.Cache.v < m.Usage: // Docker 19.03 and older, and cgroup v1
		usage -= s.Cache.v
	case s.TotalInactiveFile.ok && s.TotalInactiveFile.v < m.Usage: // cgroup v1
		usage -= s.TotalInactiveFile.v
	case s.InactiveFile.v < m.Usage: // cgroup v2, and 0 when missing
		usage -= s.InactiveFile.v
	}
	percent := 0.0
	if m.Limit != 0 {
		percent = float64(usage) / float64(m.Limit) * 100
	}
	return append(fields,
		morse.Field{Key: "limit", Value: morse.Uint(m.Limit)},
		morse.Field{Key: "max_usage", Value: morse.Uint(m.MaxUsage)},
		morse.Field{Key: "usage", Value: morse.Uint(usage)},
		morse.Field{Key: "usage_percent", Value: morse.Float(percent)})
}

// addCPU adds docker_container_cpu: cpu=cpu-total (total_include "cpu") and one per CPU
// (perdevice_include "cpu", cgroup v1 only: v2 has no per-CPU usage).
func (d *Docker) addCPU(acc morse.Accumulator, st *containerStats, cid morse.Field, tags []morse.Tag, ts time.Time) {
	c := &st.CPU
	if d.totCPU {
		acc.AddMetric(morse.NewMetric("docker_container_cpu", withTag(tags, "cpu", "cpu-total"), []morse.Field{
			cid,
			{Key: "throttling_periods", Value: morse.Uint(c.Throttling.Periods)},
			{Key: "throttling_throttled_periods", Value: morse.Uint(c.Throttling.ThrottledPeriods)},
			{Key: "throttling_throttled_time", Value: morse.Uint(c.Throttling.ThrottledTime)},
			{Key: "usage_in_kernelmode", Value: morse.Uint(c.Usage.KernelMode)},
			{Key: "usage_in_usermode", Value: morse.Uint(c.Usage.UserMode)},
			{Key: "usage_percent", Value: morse.Float(cpuPercent(st))},
			{Key: "usage_system", Value: morse.Uint(c.System)},
			{Key: "usage_total", Value: morse.Uint(c.Usage.Total)},
		}, ts))
	}
	if !d.perCPU || len(c.Usage.PerCPU) == 0 {
		return
	}
	per := c.Usage.PerCPU
	if c.OnlineCPUs > 0 && int(c.OnlineCPUs) < len(per) {
		per = per[:c.OnlineCPUs] // the rest are offline CPUs' zeros
	}
	for i, u := range per {
		acc.AddMetric(morse.NewMetric("docker_container_cpu", withTag(tags, "cpu", "cpu"+strconv.Itoa(i)),
			[]morse.Field{cid, {Key: "usage_total", Value: morse.Uint(u)}}, ts))
	}
}

// cpuPercent is the container's share of the host's CPU time between PreCPU and CPU, times
// the number of CPUs, as the Docker CLI computes it; on Windows, of the 100 ns intervals
// between the two reads.
func cpuPercent(st *containerStats) float64 {
	if st.OSType == "windows" {
		intervals := uint64(st.Read.Sub(st.PreRead).Nanoseconds()) / 100 * uint64(st.NumProcs)
		if intervals == 0 {
			return 0
		}
		return float64(st.CPU.Usage.Total-st.PreCPU.Usage.Total) / float64(intervals) * 100
	}
	cpuDelta := float64(st.CPU.Usage.Total) - float64(st.PreCPU.Usage.Total)
	sysDelta := float64(st.CPU.System) - float64(st.PreCPU.System)
	cpus := float64(st.CPU.OnlineCPUs)
	if cpus == 0 {
		cpus = float64(len(st.CPU.Usage.PerCPU))
	}
	if sysDelta > 0 && cpuDelta > 0 {
		return cpuDelta / sysDelta * cpus * 100
	}
	return 0
}

// netKeys are docker_container_net's counters, in field order.
var netKeys = [8]string{"rx_bytes", "rx_dropped", "rx_errors", "rx_packets", "tx_bytes", "tx_dropped", "tx_errors", "tx_packets"}

func (n *netStats) values() [8]uint64 {
	return [8]uint64{n.RxBytes, n.RxDropped, n.RxErrors, n.RxPackets, n.TxBytes, n.TxDropped, n.TxErrors, n.TxPackets}
}

// addNet adds docker_container_net per interface (perdevice_include "network") and their
// sum as network=total (total_include "network"); nothing for a container without
// interfaces of its own (--net=host).
func (d *Docker) addNet(acc morse.Accumulator, st *containerStats, cid morse.Field, tags []morse.Tag, ts time.Time) {
	if len(st.Networks) == 0 || !d.perNet && !d.totNet {
		return
	}
	var total [8]uint64
	for name, n := range st.Networks {
		vals := n.values()
		for i, v := range vals {
			total[i] += v
		}
		if d.perNet {
			acc.AddMetric(morse.NewMetric("docker_container_net", withTag(tags, "network", name), netFields(vals, cid), ts))
		}
	}
	if d.totNet {
		acc.AddMetric(morse.NewMetric("docker_container_net", withTag(tags, "network", "total"), netFields(total, cid), ts))
	}
}

func netFields(vals [8]uint64, cid morse.Field) []morse.Field {
	fields := make([]morse.Field, 0, 9)
	fields = append(fields, cid)
	for i, v := range vals {
		fields = append(fields, morse.Field{Key: netKeys[i], Value: morse.Uint(v)})
	}
	return fields
}

// device is one block device's fields.
type device struct {
	name   string
	fields []morse.Field
}

// set sets key, replacing an earlier value of it.
func (dv *device) set(key string, v uint64) {
	for i := range dv.fields {
		if dv.fields[i].Key == key {
			dv.fields[i].Value = morse.Uint(v)
			return
		}
	}
	dv.fields = append(dv.fields, morse.Field{Key: key, Value: morse.Uint(v)})
}

// addBlkio adds docker_container_blkio per device "major:minor" (perdevice_include
// "blkio") and device=total, the sums (total_include "blkio"; only container_id when the
// daemon gave no device).
func (d *Docker) addBlkio(acc morse.Accumulator, st *containerStats, cid morse.Field, tags []morse.Tag, ts time.Time) {
	if !d.perBlk && !d.totBlk {
		return
	}
	var devs []*device
	find := func(e *blkioEntry) *device {
		name := strconv.FormatUint(e.Major, 10) + ":" + strconv.FormatUint(e.Minor, 10)
		for _, dv := range devs {
			if dv.name == name {
				return dv
			}
		}
		dv := &device{name: name}
		devs = append(devs, dv)
		return dv
	}
	b := &st.Blkio
	for _, l := range []struct {
		prefix  string
		entries []blkioEntry
		withOp  bool
	}{
		{"io_service_bytes_recursive_", b.ServiceBytes, true}, {"io_serviced_recursive_", b.Serviced, true},
		{"io_queue_recursive_", b.Queued, true}, {"io_service_time_recursive_", b.ServiceTime, true},
		{"io_wait_time_", b.WaitTime, true}, {"io_merged_recursive_", b.Merged, true},
		{"io_time_recursive", b.Time, false}, {"sectors_recursive", b.Sectors, false},
	} {
		for i := range l.entries {
			e := &l.entries[i]
			key := l.prefix
			if l.withOp {
				key += strings.ToLower(e.Op)
			}
			find(e).set(key, e.Value)
		}
	}
	total := &device{name: "total"}
	for _, dv := range devs {
		slices.SortFunc(dv.fields, func(a, b morse.Field) int { return cmp.Compare(a.Key, b.Key) })
		for _, f := range dv.fields {
			total.add(f.Key, f.Value.Uint())
		}
		if d.perBlk {
			acc.AddMetric(morse.NewMetric("docker_container_blkio", withTag(tags, "device", dv.name), append([]morse.Field{cid}, dv.fields...), ts))
		}
	}
	if d.totBlk {
		slices.SortFunc(total.fields, func(a, b morse.Field) int { return cmp.Compare(a.Key, b.Key) })
		acc.AddMetric(morse.NewMetric("docker_container_blkio", withTag(tags, "device", "total"), append([]morse.Field{cid}, total.fields...), ts))
	}
}

// add adds v to key's value.
func (dv *device) add(key string, v uint64) {
	for i := range dv.fields {
		if dv.fields[i].Key == key {
			dv.fields[i].Value = morse.Uint(dv.fields[i].Value.Uint() + v)
			return
		}
	}
	dv.fields = append(dv.fields, morse.Field{Key: key, Value: morse.Uint(v)})
}
