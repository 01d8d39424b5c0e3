package mem

import (
	"context"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// sample is a VirtualMemoryStat whose every field has its own value, so that a field wired
// to the wrong statistic shows up.
func sample() *mem.VirtualMemoryStat {
	return &mem.VirtualMemoryStat{
		Total: 1000, Available: 250, Used: 500, Free: 4, Active: 5, Inactive: 6, Wired: 7,
		Laundry: 8, Buffers: 9, Cached: 10, WriteBack: 11, Dirty: 12, WriteBackTmp: 13, Shared: 14,
		Slab: 15, Sreclaimable: 16, Sunreclaim: 17, PageTables: 18, SwapCached: 19, CommitLimit: 20,
		CommittedAS: 21, HighTotal: 22, HighFree: 23, LowTotal: 24, LowFree: 25, SwapTotal: 26,
		SwapFree: 27, Mapped: 28, VmallocTotal: 29, VmallocUsed: 30, VmallocChunk: 31,
		HugePagesTotal: 32, HugePagesFree: 33, HugePagesRsvd: 34, HugePagesSurp: 35,
		HugePageSize: 36, AnonHugePages: 37,
	}
}

func fixed(vm *mem.VirtualMemoryStat, err error) VirtualMemoryFunc {
	return func(context.Context) (*mem.VirtualMemoryStat, error) { return vm, err }
}

func gather(t *testing.T, m *Mem) morse.Metric {
	t.Helper()
	acc := &testutil.Accumulator{}
	require.NoError(t, m.Gather(context.Background(), acc))
	ms := acc.Metrics()
	require.Len(t, ms, 1)
	require.Equal(t, "mem", ms[0].Name())
	require.Empty(t, ms[0].Tags())
	return ms[0]
}

func keysOf(m morse.Metric) []string {
	var out []string
	for _, f := range m.Fields() {
		out = append(out, f.Key)
	}
	return out
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("mem")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "[[inputs.mem]]\n"), "sample.conf starts with its header")
	m, ok := info.New().(*Mem)
	require.True(t, ok)
	require.False(t, m.CollectExtended)

	// The sample shows each option commented out at its default; uncommented, every key is
	// one the plugin knows and every value is the default.
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(strings.TrimPrefix(info.SampleConfig, "[[inputs.mem]]\n"), "$1")
	require.Contains(t, body, "collect_extended = false")
	fresh := New()
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.False(t, fresh.CollectExtended)
}

func TestLinuxFields(t *testing.T) {
	m := New()
	m.goos = "linux"
	m.VirtualMemory = fixed(sample(), nil)
	got := gather(t, m)
	require.Equal(t, map[string]any{
		"active": uint64(5), "available": uint64(250), "available_percent": 25.0, "buffered": uint64(9),
		"cached": uint64(10), "commit_limit": uint64(20), "committed_as": uint64(21), "dirty": uint64(12),
		"free": uint64(4), "high_free": uint64(23), "high_total": uint64(22), "huge_page_size": uint64(36),
		"huge_pages_free": uint64(33), "huge_pages_total": uint64(32), "inactive": uint64(6),
		"low_free": uint64(25), "low_total": uint64(24), "mapped": uint64(28), "page_tables": uint64(18),
		"shared": uint64(14), "slab": uint64(15), "sreclaimable": uint64(16), "sunreclaim": uint64(17),
		"swap_cached": uint64(19), "swap_free": uint64(27), "swap_total": uint64(26), "total": uint64(1000),
		"used": uint64(500), "used_percent": 50.0, "vmalloc_chunk": uint64(31), "vmalloc_total": uint64(29),
		"vmalloc_used": uint64(30), "write_back": uint64(11), "write_back_tmp": uint64(13),
	}, testutil.FieldsOf(got))
	require.True(t, slices.IsSorted(keysOf(got)), "fields in alphabetical order")
}

func TestPlatformFieldSets(t *testing.T) {
	base := []string{"available", "available_percent", "total", "used", "used_percent"}
	tests := []struct {
		goos  string
		extra []string
	}{
		{goos: "darwin", extra: []string{"active", "free", "inactive", "wired"}},
		{goos: "openbsd", extra: []string{"active", "cached", "free", "inactive", "wired"}},
		{goos: "freebsd", extra: []string{"active", "buffered", "cached", "free", "inactive", "laundry", "wired"}},
		{goos: "windows"},
	}
	for _, tt := range tests {
		t.Run(tt.goos, func(t *testing.T) {
			m := &Mem{goos: tt.goos, VirtualMemory: fixed(sample(), nil)}
			want := slices.Sorted(slices.Values(append(slices.Clone(base), tt.extra...)))
			require.Equal(t, want, keysOf(gather(t, m)))
		})
	}
}

func TestEdgeValues(t *testing.T) {
	tests := []struct {
		name  string
		vm    *mem.VirtualMemoryStat
		check func(t *testing.T, f map[string]any)
	}{
		{
			name: "zero total leaves out the percentages instead of writing NaN",
			vm:   &mem.VirtualMemoryStat{},
			check: func(t *testing.T, f map[string]any) {
				require.NotContains(t, f, "used_percent")
				require.NotContains(t, f, "available_percent")
				require.Equal(t, uint64(0), f["total"])
			},
		},
		{
			name: "values beyond int64 stay unsigned; clamping is the serializer's business",
			vm:   &mem.VirtualMemoryStat{Total: math.MaxUint64, VmallocTotal: 1 << 63, Used: 1},
			check: func(t *testing.T, f map[string]any) {
				require.Equal(t, uint64(math.MaxUint64), f["total"])
				require.Equal(t, uint64(1<<63), f["vmalloc_total"])
				require.Equal(t, uint64(1), f["used"])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Mem{goos: "linux", VirtualMemory: fixed(tt.vm, nil)}
			tt.check(t, testutil.FieldsOf(gather(t, m)))
		})
	}
}

func TestCollectExtended(t *testing.T) {
	ext := []morse.Field{{Key: "active_file", Value: morse.Uint(1)}, {Key: "unevictable", Value: morse.Uint(2)}}
	m := &Mem{goos: "linux", CollectExtended: true, VirtualMemory: fixed(sample(), nil),
		extended: func(context.Context) ([]morse.Field, error) { return ext, nil }}
	got := gather(t, m)
	f := testutil.FieldsOf(got)
	require.Len(t, f, 36)
	require.Equal(t, uint64(1), f["active_file"])
	require.Equal(t, uint64(2), f["unevictable"])
	require.True(t, slices.IsSorted(keysOf(got)))

	// Without the extended fields the basic ones are still reported, and the problem is
	// reported beside them, as in Telegraf.
	m.extended = func(context.Context) ([]morse.Field, error) { return nil, errors.New("no meminfo") }
	acc := &testutil.Accumulator{}
	require.NoError(t, m.Gather(context.Background(), acc))
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "reading extended memory statistics: no meminfo")
	require.Len(t, acc.Metrics(), 1)
	require.Len(t, acc.Metrics()[0].Fields(), 34)
}

func TestOpenBSDCachedIsTheBufferCache(t *testing.T) {
	f := testutil.FieldsOf(gather(t, &Mem{goos: "openbsd", VirtualMemory: fixed(sample(), nil)}))
	require.Equal(t, sample().Buffers, f["cached"], "Telegraf reports vm.Buffers as cached on OpenBSD")
}

func TestGatherFailsWhenMemoryCannotBeRead(t *testing.T) {
	m := &Mem{VirtualMemory: fixed(nil, errors.New("permission denied"))}
	acc := &testutil.Accumulator{}
	require.ErrorContains(t, m.Gather(context.Background(), acc), "reading virtual memory: permission denied")
	require.Empty(t, acc.Metrics())
}

func TestGoldenRealGather(t *testing.T) {
	ms := testutil.CheckGolden(t, "testdata/mem.golden", func() morse.Input { return New() }, 1)
	require.Len(t, ms, 1)
	shapes := testutil.LoadGolden(t, "testdata/mem.golden")
	// The check is not vacuous: a field of another OS is caught, and so is a wrong type.
	require.Equal(t, []string{"mem: field wired: emitted but marked absent-here"},
		shapes.Check([]morse.Metric{ms[0].WithField("wired", morse.Uint(0))}))
	require.Equal(t, []string{"mem: field total: type integer, golden says unsigned"},
		shapes.Check([]morse.Metric{ms[0].WithField("total", morse.Int(1))}))

	// Plausibility of the real values: a machine has memory, and percentages are percentages.
	f := testutil.FieldsOf(ms[0])
	require.Positive(t, f["total"])
	require.GreaterOrEqual(t, f["total"], f["available"])
	require.InDelta(t, 50.0, f["used_percent"], 50.0)
	require.InDelta(t, 50.0, f["available_percent"], 50.0)
}
