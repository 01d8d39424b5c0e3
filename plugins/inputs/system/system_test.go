package system

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// fake is a Source whose every value differs, so that a field wired to the wrong statistic
// shows up. The counters count reads, to check the os and dmi caches.
type fake struct {
	mu        sync.Mutex
	osReads   int
	usersErr  error
	cpuErr    error
	uptimeErr error
}

func (f *fake) source(t *testing.T) Source {
	dir := t.TempDir()
	for name, v := range map[string]string{"bios_vendor": "Dell Inc.\n", "chassis_type": "23\n", "sys_vendor": "ACME\n", "board_name": "0X3D66\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644))
	}
	return Source{
		Load: func(context.Context) (*load.AvgStat, error) {
			return &load.AvgStat{Load1: 1.5, Load5: 2.5, Load15: 3.5}, nil
		},
		Users: func(context.Context) ([]host.UserStat, error) {
			return []host.UserStat{{User: "root"}, {User: "alice"}, {User: "alice"}}, f.usersErr
		},
		CPUs: func(_ context.Context, logical bool) (int, error) {
			if logical {
				return 8, f.cpuErr
			}
			return 4, f.cpuErr
		},
		Uptime: func(context.Context) (uint64, error) { return 1249632, f.uptimeErr },
		Platform: func(context.Context) (string, string, string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.osReads++
			return "debian", "debian", "12", nil
		},
		Kernel: func(context.Context) (string, error) { return "6.1.0", nil },
		Arch:   func() (string, error) { return "x86_64", nil },
		DMIDir: dir,
	}
}

func gather(t *testing.T, s *System) *testutil.Accumulator {
	t.Helper()
	require.NoError(t, s.Validate())
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Gather(context.Background(), acc))
	return acc
}

func TestRegisteredWithTelegrafDefaults(t *testing.T) {
	info, ok := morse.DefaultRegistry().Input("system")
	require.True(t, ok)
	require.Equal(t, Description, info.Description)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[inputs.system]]\n"))
	s, ok := info.New().(*System)
	require.True(t, ok)
	require.Equal(t, []string{"legacy"}, s.Include)
	require.Equal(t, 8*time.Hour, time.Duration(s.OSCacheTTL))
	require.Equal(t, 8*time.Hour, time.Duration(s.DMICacheTTL))

	// Uncommented, the sample's options are known keys at their defaults.
	option := regexp.MustCompile(`(?m)^\s*# (\w+ = .*)$`)
	body := option.ReplaceAllString(info.SampleConfig[strings.Index(info.SampleConfig, "]]\n")+3:], "$1")
	fresh := &System{}
	md, err := toml.Decode(body, fresh)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.Equal(t, New().Include, fresh.Include)
	require.Equal(t, New().OSCacheTTL, fresh.OSCacheTTL)
	require.Equal(t, New().DMICacheTTL, fresh.DMICacheTTL)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		include []string
		wantErr string
	}{
		{include: []string{"legacy", "load", "users", "cpus", "uptime", "os", "dmi"}},
		{include: []string{"load", "load"}},
		{include: nil},
		{include: []string{"legacy_cpus"}, wantErr: `include: invalid 'include' option "legacy_cpus"; choose from legacy, load, users, cpus, uptime, os, dmi`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.include, ","), func(t *testing.T) {
			s := New()
			s.Include = tt.include
			err := s.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			var fe *morse.FieldError
			require.ErrorAs(t, err, &fe)
			require.EqualError(t, err, tt.wantErr)
		})
	}
	s := New()
	s.OSCacheTTL = -1
	require.ErrorContains(t, s.Validate(), "os_cache_ttl: must not be negative")
}

func TestLayouts(t *testing.T) {
	legacy := map[string]any{"load1": 1.5, "load5": 2.5, "load15": 3.5, "n_users": int64(3), "n_unique_users": int64(2),
		"n_cpus": int64(8), "n_physical_cpus": int64(4), "uptime": uint64(1249632), "uptime_format": "14 days, 11:07"}
	fine := map[string]any{"load1": 1.5, "load5": 2.5, "load15": 3.5, "n_users": int64(3), "n_unique_users": int64(2),
		"n_cpus": int64(8), "n_physical_cpus": int64(4), "uptime": uint64(1249632)}
	tests := []struct {
		name    string
		include []string
		want    []map[string]any
	}{
		{name: "Telegraf's default, the legacy layout", include: nil, want: []map[string]any{legacy}},
		{name: "the recommended layout", include: []string{"load", "users", "cpus", "uptime"}, want: []map[string]any{fine}},
		{name: "load only", include: []string{"load"}, want: []map[string]any{{"load1": 1.5, "load5": 2.5, "load15": 3.5}}},
		{name: "legacy and fine-grained: one metric each", include: []string{"cpus", "legacy"},
			want: []map[string]any{{"n_cpus": int64(8), "n_physical_cpus": int64(4)}, legacy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{}
			s := New()
			s.Include = tt.include
			s.Source = f.source(t)
			var got []map[string]any
			for _, m := range gather(t, s).Metrics() {
				require.Equal(t, "system", m.Name())
				require.Empty(t, m.Tags())
				got = append(got, testutil.FieldsOf(m))
			}
			require.ElementsMatch(t, tt.want, got)
		})
	}
}

func TestFormatUptime(t *testing.T) {
	for up, want := range map[uint64]string{
		0: " 0:00", 59: " 0:00", 3599: " 0:59", 3600: " 1:00", 86399: "23:59",
		86400: "1 day,  0:00", 93784: "1 day,  2:03", 1249632: "14 days, 11:07",
	} {
		require.Equal(t, want, formatUptime(up), "%d s", up)
	}
}

func TestUnreadableGroupsAreReportedAndOthersKept(t *testing.T) {
	f := &fake{cpuErr: errors.New("no cpuinfo"), uptimeErr: errors.New("no /proc/uptime"), usersErr: fs.ErrNotExist}
	s := New()
	s.Source = f.source(t)
	s.SetLogger(slog.New(slog.DiscardHandler))
	acc := gather(t, s)
	ms := acc.Metrics()
	require.Empty(t, ms, "the legacy layout needs the CPU counts, as in Telegraf")
	var msgs []string
	for _, err := range acc.Errors() {
		msgs = append(msgs, err.Error())
	}
	require.Equal(t, []string{"reading logical CPU count: no cpuinfo"}, msgs)

	// The fine-grained groups are independent: what can be read is reported.
	s.Include = []string{"load", "users", "cpus", "uptime"}
	acc = gather(t, s)
	ms = acc.Metrics()
	require.Len(t, ms, 1)
	require.Equal(t, map[string]any{"load1": 1.5, "load5": 2.5, "load15": 3.5}, testutil.FieldsOf(ms[0]),
		"users without utmp are skipped silently, as Telegraf does")
	msgs = nil
	for _, err := range acc.Errors() {
		msgs = append(msgs, err.Error())
	}
	require.Equal(t, []string{"reading logical CPU count: no cpuinfo", "reading uptime: no /proc/uptime"}, msgs)

	// Legacy without uptime still reports the gauges.
	f.cpuErr = nil
	s.Include = []string{"legacy"}
	acc = gather(t, s)
	require.Len(t, acc.Metrics(), 1)
	require.Equal(t, map[string]any{"load1": 1.5, "load5": 2.5, "load15": 3.5, "n_cpus": int64(8), "n_physical_cpus": int64(4)},
		testutil.FieldsOf(acc.Metrics()[0]))
	require.Len(t, acc.Errors(), 1)
}

func TestMissingUtmpIsAskedForAgainLater(t *testing.T) {
	calls := 0
	s := New()
	s.Include = []string{"users"}
	s.SetLogger(slog.New(slog.DiscardHandler))
	s.Source.Users = func(context.Context) ([]host.UserStat, error) {
		calls++
		return nil, fs.ErrNotExist
	}
	require.Empty(t, gather(t, s).Metrics())
	require.Empty(t, gather(t, s).Metrics())
	require.Equal(t, 1, calls, "not asked again within usersRetryAfter")
	s.usersRetry = time.Now().Add(-time.Second)
	s.Source.Users = func(context.Context) ([]host.UserStat, error) {
		calls++
		return []host.UserStat{{User: "root"}}, nil
	}
	ms := gather(t, s).Metrics()
	require.Equal(t, 2, calls)
	require.Equal(t, map[string]any{"n_users": int64(1), "n_unique_users": int64(1)}, testutil.FieldsOf(ms[0]))
}

func TestOSAndDMI(t *testing.T) {
	f := &fake{}
	s := New()
	s.Include = []string{"os", "dmi"}
	s.Source = f.source(t)
	ms := gather(t, s).Metrics()
	require.Len(t, ms, 1, "the groups share one system metric")
	require.Equal(t, "system", ms[0].Name())
	got := testutil.FieldsOf(ms[0])
	require.Len(t, got, 6+21)
	for k, v := range map[string]any{"os": "linux", "arch": "x86_64", "platform": "debian", "platform_family": "debian",
		"platform_version": "12", "kernel_version": "6.1.0"} {
		require.Equal(t, v, got[k], k)
	}
	require.Equal(t, "Dell Inc.", got["bios_vendor"])
	require.Equal(t, "23", got["chassis_type_code"])
	require.Equal(t, "Rack mount chassis", got["chassis_type"])
	require.Equal(t, "ACME", got["product_vendor"], "sys_vendor is the product vendor")
	require.Equal(t, "0X3D66", got["board_product"], "board_name is the board product")
	require.Equal(t, unknown, got["product_uuid"], "an unreadable item is unknown")

	// Both groups are cached: a second gather within the TTL reads nothing again.
	gather(t, s)
	require.Equal(t, 1, f.osReads)
	s.OSCacheTTL = 0
	gather(t, s)
	require.Equal(t, 2, f.osReads, "a zero TTL re-reads every gather")
}

func TestGoldenRealGather(t *testing.T) {
	const path = "testdata/system.golden"
	ms := testutil.CheckGolden(t, path, func() morse.Input { return New() }, 1)
	require.Len(t, ms, 1)
	shapes := testutil.LoadGolden(t, path)
	require.Equal(t, []string{"system: field n_cpus: type float, golden says integer"},
		shapes.Check([]morse.Metric{ms[0].WithField("n_cpus", morse.Float(1))}))
	got := testutil.FieldsOf(ms[0])
	require.Positive(t, got["n_cpus"])
	require.Positive(t, got["uptime"])
	require.NotContains(t, got, "uptime_format")
	// The user counts exist exactly where gopsutil can read the sessions.
	if _, err := host.Users(); err == nil {
		require.Contains(t, got, "n_users")
	} else {
		require.NotContains(t, got, "n_users")
	}

	// Telegraf's default is the legacy layout, with uptime_format.
	legacy := testutil.GatherReal(t, New(), "", 1)
	require.Len(t, legacy, 1)
	require.Empty(t, shapes.Defaults().Check(legacy))
	require.Contains(t, testutil.FieldsOf(legacy[0]), "uptime_format")
}
