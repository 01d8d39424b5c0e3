// Package netstat is the inputs.netstat plugin. It counts the system's TCP connections by
// state and its datagram sockets under Telegraf's measurement and field names.
//
// The counts come from the same source as Telegraf's: every inet and unix socket that
// gopsutil lists. So, as in Telegraf, unix stream sockets count as tcp_none and unix
// datagram sockets as udp_socket; dashboards built on Telegraf's numbers see the same ones.
package netstat

import (
	"context"
	_ "embed"
	"fmt"
	"syscall"
	"time"

	psnet "github.com/shirou/gopsutil/v4/net"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read TCP metrics such as established, time wait and sockets counts."

//go:embed sample.conf
var sampleConfig string

// ConnectionsFunc lists the system's sockets of a kind ("all"). gopsutil's
// ConnectionsWithoutUidsWithContext is the default: the owners are not needed to count.
type ConnectionsFunc func(ctx context.Context, kind string) ([]psnet.ConnectionStat, error)

// Netstat is the inputs.netstat plugin. It has no options; build it with New.
type Netstat struct {
	// Connections replaces the source of sockets; nil means the system's.
	Connections ConnectionsFunc `toml:"-"`
}

// The engine finds the interfaces by type assertion; a typo would go unnoticed.
var _ morse.Input = (*Netstat)(nil)

// New returns the plugin, which has nothing to configure.
func New() *Netstat { return &Netstat{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "netstat",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// states maps gopsutil's connection states to Telegraf's field names, in Telegraf's
// (alphabetical) field order.
var states = []struct{ status, field string }{
	{"CLOSE", "tcp_close"},
	{"CLOSE_WAIT", "tcp_close_wait"},
	{"CLOSING", "tcp_closing"},
	{"ESTABLISHED", "tcp_established"},
	{"FIN_WAIT1", "tcp_fin_wait1"},
	{"FIN_WAIT2", "tcp_fin_wait2"},
	{"LAST_ACK", "tcp_last_ack"},
	{"LISTEN", "tcp_listen"},
	{"NONE", "tcp_none"},
	{"SYN_RECV", "tcp_syn_recv"},
	{"SYN_SENT", "tcp_syn_sent"},
	{"TIME_WAIT", "tcp_time_wait"},
}

// Gather reports one netstat metric. Every field is present on every gather, zero or not.
func (n *Netstat) Gather(ctx context.Context, acc morse.Accumulator) error {
	list := n.Connections
	if list == nil {
		list = psnet.ConnectionsWithoutUidsWithContext
	}
	conns, err := list(ctx, "all")
	if err != nil {
		return fmt.Errorf("error getting net connections info: %w", err)
	}
	counts := make(map[string]int64, len(states))
	var udp int64
	for _, c := range conns {
		if c.Type == syscall.SOCK_DGRAM {
			// Datagram sockets have no state.
			udp++
			continue
		}
		counts[c.Status]++
	}
	fields := make([]morse.Field, 0, len(states)+1)
	for _, s := range states {
		fields = append(fields, morse.Field{Key: s.field, Value: morse.Int(counts[s.status])})
	}
	fields = append(fields, morse.Field{Key: "udp_socket", Value: morse.Int(udp)})
	acc.AddMetric(morse.NewMetric("netstat", nil, fields, time.Now()))
	return nil
}
