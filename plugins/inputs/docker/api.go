package docker

import (
	"errors"
	"time"
)

// The shapes below hold only what the plugin reads of the Engine API's answers (API 1.24
// and later; Docker's own types have every other key too, which costs decoding and
// allocations per gather). JSON names are the API's.

// engineInfo is what GET /info answers that the docker measurement reports.
type engineInfo struct {
	Name              string      `json:"Name"`
	ServerVersion     string      `json:"ServerVersion"`
	NCPU              int64       `json:"NCPU"`
	NFd               int64       `json:"NFd"`
	Containers        int64       `json:"Containers"`
	ContainersRunning int64       `json:"ContainersRunning"`
	ContainersStopped int64       `json:"ContainersStopped"`
	ContainersPaused  int64       `json:"ContainersPaused"`
	Images            int64       `json:"Images"`
	NGoroutines       int64       `json:"NGoroutines"`
	NEventsListener   int64       `json:"NEventsListener"`
	MemTotal          int64       `json:"MemTotal"`
	DriverStatus      [][2]string `json:"DriverStatus"`
}

// containerSummary is one entry of GET /containers/json.
type containerSummary struct {
	ID     string            `json:"Id"`
	Names  []string          `json:"Names"`
	Image  string            `json:"Image"`
	State  string            `json:"State"`
	Labels map[string]string `json:"Labels"`
}

// containerInspect is what GET /containers/{id}/json answers that the plugin reads.
type containerInspect struct {
	RestartCount int64 `json:"RestartCount"`
	State        *struct {
		Status     string `json:"Status"`
		OOMKilled  bool   `json:"OOMKilled"`
		Pid        int64  `json:"Pid"`
		ExitCode   int64  `json:"ExitCode"`
		StartedAt  string `json:"StartedAt"`
		FinishedAt string `json:"FinishedAt"`
		Health     *struct {
			Status        string `json:"Status"`
			FailingStreak int64  `json:"FailingStreak"`
		} `json:"Health"`
	} `json:"State"`
	Config *struct {
		Env []string `json:"Env"`
	} `json:"Config"`
}

// containerStats is one sample of GET /containers/{id}/stats?stream=false.
type containerStats struct {
	Read     time.Time           `json:"read"`
	PreRead  time.Time           `json:"preread"`
	OSType   string              `json:"os_type"`
	NumProcs uint32              `json:"num_procs"`
	CPU      cpuStats            `json:"cpu_stats"`
	PreCPU   cpuStats            `json:"precpu_stats"`
	Memory   memoryStats         `json:"memory_stats"`
	Networks map[string]netStats `json:"networks"`
	Blkio    blkioStats          `json:"blkio_stats"`
}

type cpuStats struct {
	Usage struct {
		Total      uint64   `json:"total_usage"`
		PerCPU     []uint64 `json:"percpu_usage"`
		KernelMode uint64   `json:"usage_in_kernelmode"`
		UserMode   uint64   `json:"usage_in_usermode"`
	} `json:"cpu_usage"`
	System     uint64 `json:"system_cpu_usage"`
	OnlineCPUs uint32 `json:"online_cpus"`
	Throttling struct {
		Periods          uint64 `json:"periods"`
		ThrottledPeriods uint64 `json:"throttled_periods"`
		ThrottledTime    uint64 `json:"throttled_time"`
	} `json:"throttling_data"`
}

type memoryStats struct {
	Usage             uint64   `json:"usage"`
	MaxUsage          uint64   `json:"max_usage"`
	Stats             memStats `json:"stats"`
	Failcnt           uint64   `json:"failcnt"`
	Limit             uint64   `json:"limit"`
	Commit            uint64   `json:"commitbytes"`
	CommitPeak        uint64   `json:"commitpeakbytes"`
	PrivateWorkingSet uint64   `json:"privateworkingset"`
}

// memStats are the keys of memory_stats.stats that Telegraf reports, each only when the
// daemon gave it (cgroup v1 has them all, v2 a few). A struct of optional values instead
// of a map: the other keys are skipped without allocating.
type memStats struct {
	ActiveAnon              opt `json:"active_anon"`
	ActiveFile              opt `json:"active_file"`
	Cache                   opt `json:"cache"`
	HierarchicalMemoryLimit opt `json:"hierarchical_memory_limit"`
	InactiveAnon            opt `json:"inactive_anon"`
	InactiveFile            opt `json:"inactive_file"`
	MappedFile              opt `json:"mapped_file"`
	Pgfault                 opt `json:"pgfault"`
	Pgmajfault              opt `json:"pgmajfault"`
	Pgpgin                  opt `json:"pgpgin"`
	Pgpgout                 opt `json:"pgpgout"`
	RSS                     opt `json:"rss"`
	RSSHuge                 opt `json:"rss_huge"`
	TotalActiveAnon         opt `json:"total_active_anon"`
	TotalActiveFile         opt `json:"total_active_file"`
	TotalCache              opt `json:"total_cache"`
	TotalInactiveAnon       opt `json:"total_inactive_anon"`
	TotalInactiveFile       opt `json:"total_inactive_file"`
	TotalMappedFile         opt `json:"total_mapped_file"`
	TotalPgfault            opt `json:"total_pgfault"`
	TotalPgmajfault         opt `json:"total_pgmajfault"`
	TotalPgpgin             opt `json:"total_pgpgin"`
	TotalPgpgout            opt `json:"total_pgpgout"`
	TotalRSS                opt `json:"total_rss"`
	TotalRSSHuge            opt `json:"total_rss_huge"`
	TotalUnevictable        opt `json:"total_unevictable"`
	TotalWriteback          opt `json:"total_writeback"`
	Unevictable             opt `json:"unevictable"`
	Writeback               opt `json:"writeback"`
}

// list is the keys in Telegraf's order (alphabetical), with their values.
func (m *memStats) list() [29]struct {
	key string
	v   opt
} {
	type kv = struct {
		key string
		v   opt
	}
	return [29]kv{
		{"active_anon", m.ActiveAnon}, {"active_file", m.ActiveFile}, {"cache", m.Cache},
		{"hierarchical_memory_limit", m.HierarchicalMemoryLimit}, {"inactive_anon", m.InactiveAnon},
		{"inactive_file", m.InactiveFile}, {"mapped_file", m.MappedFile}, {"pgfault", m.Pgfault},
		{"pgmajfault", m.Pgmajfault}, {"pgpgin", m.Pgpgin}, {"pgpgout", m.Pgpgout}, {"rss", m.RSS},
		{"rss_huge", m.RSSHuge}, {"total_active_anon", m.TotalActiveAnon},
		{"total_active_file", m.TotalActiveFile}, {"total_cache", m.TotalCache},
		{"total_inactive_anon", m.TotalInactiveAnon}, {"total_inactive_file", m.TotalInactiveFile},
		{"total_mapped_file", m.TotalMappedFile}, {"total_pgfault", m.TotalPgfault},
		{"total_pgmajfault", m.TotalPgmajfault}, {"total_pgpgin", m.TotalPgpgin},
		{"total_pgpgout", m.TotalPgpgout}, {"total_rss", m.TotalRSS}, {"total_rss_huge", m.TotalRSSHuge},
		{"total_unevictable", m.TotalUnevictable}, {"total_writeback", m.TotalWriteback},
		{"unevictable", m.Unevictable}, {"writeback", m.Writeback},
	}
}

// opt is an unsigned JSON number that may be missing.
type opt struct {
	v  uint64
	ok bool
}

var errNotUnsigned = errors.New("not an unsigned integer")

// UnmarshalJSON reads the digits without converting them to a string first.
func (o *opt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' || v > (1<<64-1-9)/10 {
			return errNotUnsigned
		}
		v = v*10 + uint64(c-'0')
	}
	if len(b) == 0 {
		return errNotUnsigned
	}
	o.v, o.ok = v, true
	return nil
}

type netStats struct {
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	RxErrors  uint64 `json:"rx_errors"`
	RxDropped uint64 `json:"rx_dropped"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxErrors  uint64 `json:"tx_errors"`
	TxDropped uint64 `json:"tx_dropped"`
}

type blkioEntry struct {
	Major uint64 `json:"major"`
	Minor uint64 `json:"minor"`
	Op    string `json:"op"`
	Value uint64 `json:"value"`
}

type blkioStats struct {
	ServiceBytes []blkioEntry `json:"io_service_bytes_recursive"`
	Serviced     []blkioEntry `json:"io_serviced_recursive"`
	Queued       []blkioEntry `json:"io_queue_recursive"`
	ServiceTime  []blkioEntry `json:"io_service_time_recursive"`
	WaitTime     []blkioEntry `json:"io_wait_time_recursive"`
	Merged       []blkioEntry `json:"io_merged_recursive"`
	Time         []blkioEntry `json:"io_time_recursive"`
	Sectors      []blkioEntry `json:"sectors_recursive"`
}
