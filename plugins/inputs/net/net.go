// Package net is the inputs.net plugin. It reports the counters of each network interface
// and, on Linux, the system-wide protocol counters of /proc/net/snmp under the tag
// interface=all, with Telegraf's measurement, tag and field names.
//
// The counters are reported raw, as Telegraf does: they wrap or reset, and rates are left
// to queries (non_negative_derivative).
package net

import (
	"context"
	_ "embed"
	"fmt"
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
	// Protocols reads the counters of /proc/net/snmp.
	Protocols func(ctx context.Context, protocols []string) ([]psnet.ProtoCountersStat, error)
	// Interfaces lists the interfaces with their flags (up, loopback).
	Interfaces func() ([]stdnet.Interface, error)
	// SysDir is the sysfs mount, for the speed field; empty means $HOST_SYS or /sys.
	SysDir string
}

// Net is the inputs.net plugin and its configuration. Build it with New.
type Net struct {
	// Interfaces restricts the report to these interfaces (names or globs), whatever their
	// state. Empty means every interface that is up, loopback excepted.
	Interfaces []string `toml:"interfaces"`
	// IgnoreProtocolStats leaves out the interface=all protocol counters.
	IgnoreProtocolStats bool `toml:"ignore_protocol_stats"`

	// Source replaces where the counters come from; the zero value means the system's.
	Source Source `toml:"-"`
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input     = (*Net)(nil)
	_ morse.Validator = (*Net)(nil)
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

func (n *Net) source() Source {
	s := n.Source
	if s.IOCounters == nil {
		s.IOCounters = psnet.IOCountersWithContext
	}
	if s.Protocols == nil {
		s.Protocols = psnet.ProtoCountersWithContext
	}
	if s.Interfaces == nil {
		s.Interfaces = stdnet.Interfaces
	}
	if s.SysDir == "" {
		s.SysDir = os.Getenv("HOST_SYS")
	}
	if s.SysDir == "" {
		s.SysDir = "/sys"
	}
	return s
}

// Gather reports one net metric per interface and, unless ignored, the protocol metric.
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
	now := time.Now()
	for _, io := range counters {
		if !n.selected(io.Name, byName) {
			continue
		}
		tags := []morse.Tag{{Key: "interface", Value: io.Name}}
		acc.AddMetric(morse.NewMetric("net", tags, interfaceFields(io, speed(src.SysDir, io.Name)), now))
	}
	if !n.IgnoreProtocolStats {
		// Telegraf ignores a failure here silently: /proc/net/snmp is Linux only, and the
		// interface counters above are still worth reporting.
		protos, _ := src.Protocols(ctx, nil)
		if fields := protocolFields(protos); len(fields) > 0 {
			acc.AddMetric(morse.NewMetric("net", []morse.Tag{{Key: "interface", Value: "all"}}, fields, now))
		}
	}
	return nil
}

// selected applies the interfaces option, or without it Telegraf's default: interfaces that
// exist, are up and are not loopback.
func (n *Net) selected(name string, byName map[string]stdnet.Interface) bool {
	if len(n.Interfaces) > 0 {
		return slices.ContainsFunc(n.Interfaces, func(p string) bool {
			ok, _ := path.Match(p, name)
			return ok
		})
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

// protocolFields names each counter "<protocol>_<counter>" in lower case, as Telegraf does:
// Tcp ActiveOpens becomes tcp_activeopens.
func protocolFields(protos []psnet.ProtoCountersStat) []morse.Field {
	var fields []morse.Field
	for _, p := range protos {
		for stat, v := range p.Stats {
			fields = append(fields, morse.Field{Key: strings.ToLower(p.Protocol) + "_" + strings.ToLower(stat), Value: morse.Int(v)})
		}
	}
	slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
	return fields
}

// num makes an integer field. Telegraf writes these uint64 counters as integers, so existing
// series expect that type; a value beyond int64 is clamped, as Telegraf's serializer does.
func num(key string, v uint64) morse.Field {
	return morse.Field{Key: key, Value: morse.Int(int64(min(v, 1<<63-1)))}
}
