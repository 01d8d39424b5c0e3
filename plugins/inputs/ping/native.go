package ping

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	probing "github.com/prometheus-community/pro-bing"

	"github.com/morse-agent/morse"
)

// nextID hands out ICMP identifiers, distinct for up to 65536 runs at once in the process,
// so that concurrent pingers never take each other's replies. Telegraf keeps a list of the
// identifiers in use for the same end.
var nextID atomic.Uint32

func init() { nextID.Store(rand.Uint32N(math.MaxUint16)) }

// ErrPermission reports that neither socket the native method may use could be opened.
var ErrPermission = errors.New("permission changes required: grant the agent CAP_NET_RAW " +
	"(packaging/ping.conf, a systemd drop-in) or put its group in net.ipv4.ping_group_range")

// nativeStats is the outcome of one host's run.
type nativeStats struct {
	*probing.Statistics
	ttl int
}

func (p *Ping) gatherNative(ctx context.Context, acc morse.Accumulator, host string) {
	stats, err := p.nativePing(ctx, host)
	if err != nil {
		acc.AddError(errorf(host, err))
		code := resultError
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			code = resultNoHost
		}
		add(acc, host, map[string]any{"result_code": code})
		return
	}
	fields := map[string]any{
		"result_code":         resultSuccess,
		"packets_transmitted": stats.PacketsSent,
		"packets_received":    stats.PacketsRecv,
	}
	switch {
	case stats.PacketsSent == 0:
		fields["result_code"] = resultError
	case stats.PacketsRecv == 0:
		fields["result_code"] = resultNoHost
		fields["percent_packet_loss"] = float64(100)
	default:
		rtts := slices.Clone(stats.Rtts)
		slices.Sort(rtts)
		for _, perc := range p.Percentiles {
			fields[fmt.Sprintf("percentile%d_ms", perc)] = msFloat(percentile(rtts, perc))
		}
		fields["ttl"] = stats.ttl
		fields["percent_packet_loss"] = stats.PacketLoss
		fields["minimum_response_ms"] = msFloat(stats.MinRtt)
		fields["average_response_ms"] = msFloat(stats.AvgRtt)
		fields["maximum_response_ms"] = msFloat(stats.MaxRtt)
		fields["standard_deviation_ms"] = msFloat(stats.StdDevRtt)
	}
	add(acc, host, fields)
}

// nativePing runs one host's echo requests: through a raw socket unless that was refused
// before, then through a datagram socket if the raw one is refused.
func (p *Ping) nativePing(ctx context.Context, host string) (*nativeStats, error) {
	if !p.forceDatagram && p.raw.Load() != 2 {
		stats, err := p.runPinger(ctx, host, true)
		if !denied(err) {
			if err == nil {
				p.raw.Store(1)
			}
			return stats, err
		}
		p.raw.Store(2)
		p.warnOnce.Do(func() {
			p.logger().Info("raw ICMP sockets are not permitted (no CAP_NET_RAW); sending through ICMP datagram sockets")
		})
	}
	stats, err := p.runPinger(ctx, host, false)
	if denied(err) {
		return nil, fmt.Errorf("%w: %w", ErrPermission, err)
	}
	return stats, err
}

// denied reports a socket the kernel refused to open for lack of privilege.
func denied(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

func (p *Ping) runPinger(ctx context.Context, host string, privileged bool) (*nativeStats, error) {
	pinger := probing.New(host)
	pinger.SetLogger(probing.NoopLogger{})
	pinger.SetPrivileged(privileged)
	pinger.SetID(int(uint16(nextID.Add(1))))
	switch {
	case p.IPv4 && !p.IPv6:
		pinger.SetNetwork("ip4")
	case p.IPv6 && !p.IPv4:
		pinger.SetNetwork("ip6")
	}
	pinger.Size = int(p.Size)
	pinger.Count = p.Count
	pinger.Interval = max(time.Duration(p.PingInterval), 200*time.Millisecond)
	if p.Deadline > 0 {
		pinger.Timeout = time.Duration(p.Deadline)
		pinger.ResolveTimeout = time.Duration(p.Deadline)
	}
	src, err := p.source()
	if err != nil {
		return nil, err
	}
	pinger.Source = src
	stats := &nativeStats{}
	var once sync.Once
	// The TTL of the first reply, as Telegraf reports it.
	pinger.OnRecv = func(pkt *probing.Packet) { once.Do(func() { stats.ttl = pkt.TTL }) }
	if err := pinger.Resolve(); err != nil {
		return nil, fmt.Errorf("resolving: %w", err)
	}
	if err := pinger.RunWithContext(ctx); err != nil {
		return nil, err
	}
	stats.Statistics = pinger.Statistics()
	return stats, nil
}

// source is the address to send from: interface, when it is an address, or the first
// address of the interface it names.
func (p *Ping) source() (string, error) {
	if p.Interface == "" || net.ParseIP(p.Interface) != nil {
		return p.Interface, nil
	}
	iface, err := net.InterfaceByName(p.Interface)
	if err != nil {
		return "", fmt.Errorf("interface %q: %w", p.Interface, err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return "", fmt.Errorf("the addresses of interface %q: %w", p.Interface, err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok {
			return ipnet.IP.String(), nil
		}
	}
	return "", fmt.Errorf("interface %q has no address", p.Interface)
}

// percentile is R7 of Hyndman and Fan (1996), as Telegraf computes it, over sorted values.
func percentile(values []time.Duration, perc int) time.Duration {
	if len(values) == 0 {
		return 0
	}
	perc = min(max(perc, 0), 100)
	rank := float64(perc) / 100 * float64(len(values)-1)
	lower := int(rank)
	if lower >= len(values)-1 {
		return values[len(values)-1]
	}
	frac := rank - math.Floor(rank)
	return values[lower] + time.Duration(frac*float64(values[lower+1]-values[lower]))
}
