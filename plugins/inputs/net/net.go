// Package net is the inputs.net plugin. It reports the counters of each network interface
// with Telegraf's measurement, tag and field names and types: the counters are unsigned
// (gopsutil's uint64), speed is a signed integer (-1 where unknown).
//
// Like Telegraf 1.37 and later, it no longer reports the protocol counters of
// /proc/net/snmp (interface=all); inputs.nstat reports them. ignore_protocol_stats is still
// accepted, with one warning at start that it has no effect.
//
// The counters are reported raw, as Telegraf does: they wrap or reset, and rates are left
// to queries (non_negative_derivative).
package net

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	stdnet "net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	psnet "github.com/shirou/gopsutil/v4/net"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Gather metrics about network interfaces"

//go:embed sample.conf
var sampleConfig string

// Source reads the counters and the interface list. The zero value means the system's;
// tests inject fixed values.
type Source struct {
	// IOCounters reads the counters of each interface.
	IOCounters func(ctx context.Context, perNIC bool) ([]psnet.IOCountersStat, error)
	// Interfaces lists the interfaces with their flags (up, loopback).
	Interfaces func() ([]stdnet.Interface, error)
	// SysDir is the sysfs mount, for the speed field; empty means $HOST_SYS or /sys.
	SysDir string
	// Getenv reads the environment, for HOST_PROC and HOST_SYS.
	Getenv func(key string) string
}

// Net is the inputs.net plugin and its configuration. Build it with New.
type Net struct {
	// Interfaces restricts the report to these interfaces (names or globs), whatever their
	// state. Empty means every interface that is up, loopback excepted.
	Interfaces []string `toml:"interfaces"`
	// IgnoreProtocolStats is accepted for old configs and has no effect: protocol counters
	// are inputs.nstat's, as in Telegraf 1.37 and later. A pointer tells whether it is set.
	IgnoreProtocolStats *bool `toml:"ignore_protocol_stats"`

	// Source replaces where the counters come from; the zero value means the system's.
	Source Source `toml:"-"`

	log *slog.Logger
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input        = (*Net)(nil)
	_ morse.Validator    = (*Net)(nil)
	_ morse.Initializer  = (*Net)(nil)
	_ morse.LoggerSetter = (*Net)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Net { return &Net{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "net",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate refuses interface patterns that can never match.
func (n *Net) Validate() error {
	for _, p := range n.Interfaces {
		if _, err := path.Match(p, ""); err != nil {
			return morse.Errorf("interfaces", "invalid pattern %q: %v", p, err)
		}
	}
	return nil
}

// SetLogger gives the plugin the engine's logger, which already names the plugin.
func (n *Net) SetLogger(l *slog.Logger) { n.log = l }

// Init warns once when the config sets ignore_protocol_stats, which no longer does anything.
func (n *Net) Init() error {
	if n.IgnoreProtocolStats != nil {
		l := n.log
		if l == nil {
			l = slog.Default()
		}
		l.Warn("ignore_protocol_stats has no effect: protocol statistics are not reported by inputs.net " +
			"(as in Telegraf 1.37 and later); use inputs.nstat for them")
	}
	return nil
}

func (n *Net) source() Source {
	s := n.Source
	if s.IOCounters == nil {
		s.IOCounters = psnet.IOCountersWithContext
	}
	if s.Interfaces == nil {
		s.Interfaces = stdnet.Interfaces
	}
	if s.Getenv == nil {
		s.Getenv = os.Getenv
	}
	if s.SysDir == "" {
		s.SysDir = s.Getenv("HOST_SYS")
	}
	if s.SysDir == "" {
		s.SysDir = "/sys"
	}
	return s
}

// Gather reports one net metric per interface.
func (n *Net) Gather(ctx context.Context, acc morse.Accumulator) error {
	src := n.source()
	counters, err := src.IOCounters(ctx, true)
	if err != nil {
		return fmt.Errorf("error getting net io info: %w", err)
	}
	ifaces, err := src.Interfaces()
	if err != nil {
		return fmt.Errorf("error getting list of interfaces: %w", err)
	}
	byName := make(map[string]stdnet.Interface, len(ifaces))
	for _, i := range ifaces {
		byName[i.Name] = i
	}
	// With HOST_PROC set the interfaces are a container's view of the host, which the
	// local interface list cannot vouch for; Telegraf then skips the checks.
	skipChecks := src.Getenv("HOST_PROC") != ""
	now := time.Now()
	for _, io := range counters {
		if !n.selected(io.Name, byName, skipChecks) {
			continue
		}
		tags := []morse.Tag{{Key: "interface", Value: io.Name}}
		acc.AddMetric(morse.NewMetric("net", tags, interfaceFields(io, speed(src.SysDir, io.Name)), now))
	}
	return nil
}

// selected applies the interfaces option, or without it Telegraf's default: interfaces that
// exist, are up and are not loopback.
func (n *Net) selected(name string, byName map[string]stdnet.Interface, skipChecks bool) bool {
	if len(n.Interfaces) > 0 {
		return slices.ContainsFunc(n.Interfaces, func(p string) bool {
			ok, _ := path.Match(p, name)
			return ok
		})
	}
	if skipChecks {
		return true
	}
	i, ok := byName[name]
	return ok && i.Flags&stdnet.FlagLoopback == 0 && i.Flags&stdnet.FlagUp != 0
}

// speed is the link speed in Mbit/s from sysfs, or -1 where the driver does not report one
// (virtual interfaces, a link that is down, other platforms), as in Telegraf.
func speed(sysDir, name string) int64 {
	if runtime.GOOS != "linux" {
		return -1
	}
	b, err := os.ReadFile(filepath.Join(sysDir, "class", "net", name, "speed"))
	if err != nil {
		return -1
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func interfaceFields(io psnet.IOCountersStat, speed int64) []morse.Field {
	return []morse.Field{
		num("bytes_recv", io.BytesRecv),
		num("bytes_sent", io.BytesSent),
		num("drop_in", io.Dropin),
		num("drop_out", io.Dropout),
		num("err_in", io.Errin),
		num("err_out", io.Errout),
		num("packets_recv", io.PacketsRecv),
		num("packets_sent", io.PacketsSent),
		{Key: "speed", Value: morse.Int(speed)},
	}
}

// num makes an unsigned field, the type Telegraf emits for gopsutil's uint64 counters.
// Outputs without uint support write it as a signed integer, clamped as Telegraf clamps it.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Uint(v)}
}
