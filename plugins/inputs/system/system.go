// Package system is the inputs.system plugin. It reports the load averages, the logged-in
// users, the CPU counts, the uptime, and on request the operating system release and the
// DMI data, under Telegraf's measurement, field names and types and its include option.
//
// Telegraf emits the legacy layout (its default) as three metrics of one series and one
// timestamp: the gauges, the uptime counter and the uptime_format string. A time-series
// database stores them as one point either way, so morse emits them as a single system
// metric; the field names, types and values are Telegraf's. The fine-grained groups (load,
// users, cpus, uptime, os, dmi) share one more system metric, as in Telegraf.
package system

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/load"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics about system load & uptime"

//go:embed sample.conf
var sampleConfig string

// usersRetryAfter is how long a missing or unreadable utmp is not asked for again.
const usersRetryAfter = 5 * time.Minute

// defaultInclude is Telegraf's default, which keeps the field layout of older releases.
var defaultInclude = []string{"legacy"}

// groups are the values Telegraf 1.39.3 accepts in include.
var groups = []string{"legacy", "load", "users", "cpus", "uptime", "os", "dmi"}

// Source reads the statistics the plugin reports. The zero value reads the system's through
// gopsutil; tests replace single functions.
type Source struct {
	// Load reads the load averages.
	Load func(ctx context.Context) (*load.AvgStat, error)
	// Users lists the login sessions.
	Users func(ctx context.Context) ([]host.UserStat, error)
	// CPUs counts the logical or the physical CPUs.
	CPUs func(ctx context.Context, logical bool) (int, error)
	// Uptime is the time since boot in seconds.
	Uptime func(ctx context.Context) (uint64, error)
	// Platform names the distribution, its family and version.
	Platform func(ctx context.Context) (platform, family, version string, err error)
	// Kernel is the kernel release (uname -r).
	Kernel func(ctx context.Context) (string, error)
	// Arch is the machine architecture (uname -m).
	Arch func() (string, error)
	// DMIDir is the directory of the DMI files, /sys/class/dmi/id when empty.
	DMIDir string
}

// System is the inputs.system plugin and its configuration. Build it with New.
type System struct {
	// Include selects the groups of information to collect, see sample.conf.
	Include []string `toml:"include"`
	// OSCacheTTL is how long the os group's fields are reused before they are read again.
	OSCacheTTL morse.Duration `toml:"os_cache_ttl"`
	// DMICacheTTL is how long the dmi group's fields are reused before they are read again.
	DMICacheTTL morse.Duration `toml:"dmi_cache_ttl"`

	// Source replaces where the statistics come from; the zero value means the system's.
	Source Source `toml:"-"`

	mu  sync.Mutex
	log *slog.Logger
	// usersRetry is when to ask for the sessions again after they could not be read.
	usersRetry time.Time
	// noGroups is set when Init removed the only group, so that the empty list does not
	// mean the default.
	noGroups    bool
	osFields    []morse.Field
	osCachedAt  time.Time
	dmiFields   []morse.Field
	dmiCachedAt time.Time
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*System)(nil)
	_ morse.Validator    = (*System)(nil)
	_ morse.Initializer  = (*System)(nil)
	_ morse.LoggerSetter = (*System)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *System {
	return &System{
		Include:     slices.Clone(defaultInclude),
		OSCacheTTL:  morse.Duration(8 * time.Hour),
		DMICacheTTL: morse.Duration(8 * time.Hour),
	}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "system",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (s *System) SetLogger(l *slog.Logger) { s.log = l }

func (s *System) logger() *slog.Logger {
	if s.log == nil {
		return slog.Default()
	}
	return s.log
}

// Validate refuses unknown groups, as Telegraf's Init does, and negative cache times.
func (s *System) Validate() error {
	for _, g := range s.Include {
		if !slices.Contains(groups, g) {
			return morse.Errorf("include", "invalid 'include' option %q; choose from %s", g, strings.Join(groups, ", "))
		}
	}
	if s.OSCacheTTL < 0 {
		return morse.Errorf("os_cache_ttl", "must not be negative, got %s", s.OSCacheTTL)
	}
	if s.DMICacheTTL < 0 {
		return morse.Errorf("dmi_cache_ttl", "must not be negative, got %s", s.DMICacheTTL)
	}
	return nil
}

// Init drops the dmi group where DMI cannot be read, with one warning, as Telegraf does.
func (s *System) Init() error {
	if slices.Contains(s.Include, "dmi") && !dmiSupported {
		s.logger().Warn("'dmi' is not supported on this platform, ignoring", "os", runtime.GOOS)
		s.Include = slices.DeleteFunc(slices.Clone(s.Include), func(g string) bool { return g == "dmi" })
		if len(s.Include) == 0 {
			s.Include = []string{}
			s.noGroups = true
		}
	}
	return nil
}

// selected is the include list without duplicates; an empty list means Telegraf's default.
func (s *System) selected() []string {
	if len(s.Include) == 0 && !s.noGroups {
		return defaultInclude
	}
	out := make([]string, 0, len(s.Include))
	for _, g := range s.Include {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Gather reports the system metric of the fine-grained groups and, with legacy, the legacy
// one. A group that cannot be read is reported through acc.AddError and the other groups
// still are, as Telegraf does.
func (s *System) Gather(ctx context.Context, acc morse.Accumulator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	fields := make([]morse.Field, 0, 16)
	for _, g := range s.selected() {
		var err error
		switch g {
		case "load":
			fields, err = s.appendLoad(ctx, fields, false)
		case "users":
			fields = s.appendUsers(ctx, fields, now)
		case "cpus":
			fields, err = s.appendCPUs(ctx, fields)
		case "uptime":
			fields, err = s.appendUptime(ctx, fields, false)
		case "os":
			fields, err = s.appendOS(ctx, fields, now)
		case "dmi":
			fields = s.appendDMI(fields, now)
		case "legacy":
			err = s.gatherLegacy(ctx, acc, now)
		}
		acc.AddError(err)
	}
	if len(fields) > 0 {
		addSystem(acc, fields, now)
	}
	return nil
}

// gatherLegacy reports Telegraf's legacy layout: load averages, CPU counts, users, uptime
// and uptime_format. Missing load averages count as zeros there, as in Telegraf; a failed
// CPU count stops the metric, a failed uptime read leaves out the two uptime fields.
func (s *System) gatherLegacy(ctx context.Context, acc morse.Accumulator, now time.Time) error {
	fields, err := s.appendLoad(ctx, make([]morse.Field, 0, 10), true)
	if err != nil {
		return err
	}
	if fields, err = s.appendCPUs(ctx, fields); err != nil {
		return err
	}
	fields = s.appendUsers(ctx, fields, now)
	fields, err = s.appendUptime(ctx, fields, true)
	addSystem(acc, fields, now)
	return err
}

// addSystem adds one system metric with its fields in alphabetical order, as Telegraf
// writes them, which makes lines easy to compare by eye.
func addSystem(acc morse.Accumulator, fields []morse.Field, now time.Time) {
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	acc.AddMetric(morse.NewMetric("system", nil, fields, now))
}

// appendLoad adds the load averages. Where they do not exist (Windows) Telegraf stays
// silent: the load group leaves them out, the legacy layout reports zeros.
func (s *System) appendLoad(ctx context.Context, out []morse.Field, zeroIfMissing bool) ([]morse.Field, error) {
	read := s.Source.Load
	if read == nil {
		read = load.AvgWithContext
	}
	avg, err := read(ctx)
	switch {
	case err != nil && !notImplemented(err):
		return out, fmt.Errorf("reading load averages: %w", err)
	case err != nil && !zeroIfMissing:
		return out, nil
	case err != nil:
		avg = &load.AvgStat{}
	}
	return append(out,
		morse.Field{Key: "load1", Value: morse.Float(avg.Load1)},
		morse.Field{Key: "load5", Value: morse.Float(avg.Load5)},
		morse.Field{Key: "load15", Value: morse.Float(avg.Load15)},
	), nil
}

// appendUsers adds n_users and n_unique_users. Without a readable utmp the fields are left
// out and only logged, as Telegraf does: many containers and minimal systems have none.
// Unlike Telegraf, a missing or unreadable utmp is asked for again only after
// usersRetryAfter: without one gopsutil runs loginctl, which costs about 10 ms a gather.
func (s *System) appendUsers(ctx context.Context, out []morse.Field, now time.Time) []morse.Field {
	if now.Before(s.usersRetry) {
		return out
	}
	read := s.Source.Users
	if read == nil {
		read = host.UsersWithContext
	}
	users, err := read(ctx)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		s.logger().Debug("reading users; asking again later", "error", err, "after", usersRetryAfter)
		s.usersRetry = now.Add(usersRetryAfter)
		return out
	case err != nil:
		s.logger().Warn("reading users", "error", err)
		return out
	}
	unique := map[string]bool{}
	for _, u := range users {
		unique[u.User] = true
	}
	return append(out,
		morse.Field{Key: "n_users", Value: morse.Int(int64(len(users)))},
		morse.Field{Key: "n_unique_users", Value: morse.Int(int64(len(unique)))},
	)
}

func (s *System) appendCPUs(ctx context.Context, out []morse.Field) ([]morse.Field, error) {
	count := s.Source.CPUs
	if count == nil {
		count = cpu.CountsWithContext
	}
	logical, err := count(ctx, true)
	if err != nil {
		return out, fmt.Errorf("reading logical CPU count: %w", err)
	}
	physical, err := count(ctx, false)
	if err != nil {
		return out, fmt.Errorf("reading physical CPU count: %w", err)
	}
	return append(out,
		morse.Field{Key: "n_cpus", Value: morse.Int(int64(logical))},
		morse.Field{Key: "n_physical_cpus", Value: morse.Int(int64(physical))},
	), nil
}

func (s *System) appendUptime(ctx context.Context, out []morse.Field, legacy bool) ([]morse.Field, error) {
	read := s.Source.Uptime
	if read == nil {
		read = host.UptimeWithContext
	}
	up, err := read(ctx)
	if err != nil {
		return out, fmt.Errorf("reading uptime: %w", err)
	}
	// gopsutil's uint64, which Telegraf adds as it is.
	out = append(out, morse.Field{Key: "uptime", Value: morse.Uint(up)})
	if legacy {
		out = append(out, morse.Field{Key: "uptime_format", Value: morse.String(formatUptime(up))})
	}
	return out, nil
}

// formatUptime writes uptime the way Telegraf (and uptime(1)) does: "14 days, 11:07",
// "1 day,  2:03" or " 5:09" without days.
func formatUptime(up uint64) string {
	var b strings.Builder
	if days := up / (60 * 60 * 24); days != 0 {
		plural := ""
		if days > 1 {
			plural = "s"
		}
		fmt.Fprintf(&b, "%d day%s, ", days, plural)
	}
	minutes := up / 60
	fmt.Fprintf(&b, "%2d:%02d", (minutes/60)%24, minutes%60)
	return b.String()
}
