// Package nstat is the inputs.nstat plugin. It reports the kernel's network counters from
// /proc/net/netstat, /proc/net/snmp and /proc/net/snmp6, read directly, as one nstat metric
// per file tagged name=netstat, snmp or snmp6, with the counters named as nstat(8) names
// them (TcpExtSyncookiesSent, IpForwarding, Ip6InReceives), exactly as Telegraf does.
//
// The counters are reported raw: rates are left to queries. A counter that cannot be parsed
// is left out, as in Telegraf; a file whose header and value lines do not line up is an
// error, where Telegraf would crash.
package nstat

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Collect kernel snmp counters and network interface statistics"

//go:embed sample.conf
var sampleConfig string

// Nstat is the inputs.nstat plugin and its configuration. Build it with New.
type Nstat struct {
	// ProcNetNetstat is the path of /proc/net/netstat; empty means the environment's or the default.
	ProcNetNetstat string `toml:"proc_net_netstat"`
	// ProcNetSNMP is the path of /proc/net/snmp; empty means the environment's or the default.
	ProcNetSNMP string `toml:"proc_net_snmp"`
	// ProcNetSNMP6 is the path of /proc/net/snmp6; empty means the environment's or the default.
	ProcNetSNMP6 string `toml:"proc_net_snmp6"`
	// DumpZeros reports counters that are zero too. Telegraf's default is false.
	DumpZeros bool `toml:"dump_zeros"`

	// getenv reads the environment; tests replace it.
	getenv func(string) string
}

// The engine finds the interfaces by type assertion; a typo would go unnoticed.
var _ morse.Input = (*Nstat)(nil)

// New returns the plugin with Telegraf's defaults.
func New() *Nstat { return &Nstat{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "nstat",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// path picks the configured path, else the file's environment variable, else the file
// below $PROC_ROOT or /proc, in Telegraf's order.
func (n *Nstat) path(configured, env, file string) string {
	getenv := n.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if configured != "" {
		return configured
	}
	if p := getenv(env); p != "" {
		return p
	}
	root := getenv("PROC_ROOT")
	if root == "" {
		root = "/proc"
	}
	return root + file
}

// Gather reports the three nstat metrics. netstat and snmp must be readable; snmp6 is
// missing where IPv6 is disabled, which is not an error, as in Telegraf.
func (n *Nstat) Gather(_ context.Context, acc morse.Accumulator) error {
	now := time.Now()
	netstat, err := os.ReadFile(n.path(n.ProcNetNetstat, "PROC_NET_NETSTAT", "/net/netstat"))
	if err != nil {
		return err
	}
	snmp, err := os.ReadFile(n.path(n.ProcNetSNMP, "PROC_NET_SNMP", "/net/snmp"))
	if err != nil {
		return err
	}
	snmp6, err := os.ReadFile(n.path(n.ProcNetSNMP6, "PROC_NET_SNMP6", "/net/snmp6"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tables := []struct {
		name  string
		read  func([]byte, bool) ([]morse.Field, error)
		data  []byte
		exist bool
	}{
		{"netstat", headerTable, netstat, true},
		{"snmp", headerTable, snmp, true},
		{"snmp6", pairTable, snmp6, err == nil},
	}
	for _, t := range tables {
		if !t.exist {
			continue
		}
		fields, err := t.read(t.data, n.DumpZeros)
		if err != nil {
			return fmt.Errorf("reading the %s counters: %w", t.name, err)
		}
		if len(fields) == 0 {
			continue
		}
		slices.SortFunc(fields, func(a, b morse.Field) int { return strings.Compare(a.Key, b.Key) })
		acc.AddMetric(morse.NewMetric("nstat", []morse.Tag{{Key: "name", Value: t.name}}, fields, now))
	}
	return nil
}

// headerTable reads the netstat and snmp layout: a line of names after a "Prefix:" and the
// line below it with the values. Each counter is named prefix+name, as nstat(8) does.
func headerTable(data []byte, dumpZeros bool) ([]morse.Field, error) {
	var lines [][]byte
	for line := range bytes.Lines(data) {
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
		}
	}
	var fields []morse.Field
	for i := 0; i < len(lines); i += 2 {
		headers := bytes.Fields(lines[i])
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("%q has no line of values", headers[0])
		}
		values := bytes.Fields(lines[i+1])
		if len(values) != len(headers) || !bytes.Equal(values[0], headers[0]) {
			return nil, fmt.Errorf("the values of %q do not match its %d names", headers[0], len(headers)-1)
		}
		prefix := string(bytes.TrimSuffix(headers[0], []byte(":")))
		for j := 1; j < len(headers); j++ {
			fields = appendCounter(fields, prefix+string(headers[j]), values[j], dumpZeros)
		}
	}
	return fields, nil
}

// pairTable reads the snmp6 layout: one "Name value" pair per line.
func pairTable(data []byte, dumpZeros bool) ([]morse.Field, error) {
	words := bytes.Fields(data)
	if len(words)%2 != 0 {
		return nil, fmt.Errorf("%q has no value", words[len(words)-1])
	}
	var fields []morse.Field
	for i := 0; i < len(words); i += 2 {
		fields = appendCounter(fields, string(words[i]), words[i+1], dumpZeros)
	}
	return fields, nil
}

// appendCounter adds one counter, leaving out zeros unless asked for them and values that
// do not parse as integers, as Telegraf does.
func appendCounter(fields []morse.Field, name string, value []byte, dumpZeros bool) []morse.Field {
	if string(value) == "0" && !dumpZeros {
		return fields
	}
	v, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return fields
	}
	return append(fields, morse.Field{Key: name, Value: morse.Int(v)})
}
