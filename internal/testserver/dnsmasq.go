package testserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// Dnsmasq, from Debian's dnsmasq-base package (scripts/ensure-dnsmasq.sh), is a real DNS
// server for inputs.dns_query. The harness runs it once per test binary (SharedDnsmasq)
// on a free port of 127.0.0.1, UDP and TCP, with no upstream and the records below;
// StopSharedDnsmasq, called from TestMain, ends it, and on Linux the kernel kills it if the
// test process dies first.

// The zone the shared dnsmasq answers for. Any other name under it is NXDOMAIN.
const (
	DNSZone       = "morse.test"
	DNSHost       = "www.morse.test" // A DNSHostIPv4 and AAAA DNSHostIPv6
	DNSHostIPv4   = "192.0.2.10"
	DNSHostIPv6   = "2001:db8::10"
	DNSMailHost   = "mail.morse.test"
	DNSMXPref     = 10
	DNSTXT        = "v=morse test record"
	DNSNXDomain   = "missing.morse.test"
	DNSTwoAddrs   = "two.morse.test" // A 192.0.2.21 and 192.0.2.22
	dnsmasqBinary = "/usr/sbin/dnsmasq"
)

// Dnsmasq is the shared dnsmasq.
type Dnsmasq struct {
	// Port is the port it serves on 127.0.0.1, over UDP and TCP.
	Port int
	cmd  *exec.Cmd
	done chan struct{}
	dir  string
}

var sharedDNS struct {
	mu  sync.Mutex
	srv *Dnsmasq
	err error
}

// SharedDnsmasq returns the test binary's dnsmasq, starting it on first use, and fails the
// test when it cannot start.
func SharedDnsmasq(t testing.TB) *Dnsmasq {
	t.Helper()
	sharedDNS.mu.Lock()
	defer sharedDNS.mu.Unlock()
	if sharedDNS.srv == nil && sharedDNS.err == nil {
		sharedDNS.srv, sharedDNS.err = startDnsmasq()
	}
	require.NoError(t, sharedDNS.err, "testserver: dnsmasq did not start")
	return sharedDNS.srv
}

// StopSharedDnsmasq ends the shared dnsmasq, if one was started.
func StopSharedDnsmasq() {
	sharedDNS.mu.Lock()
	defer sharedDNS.mu.Unlock()
	if sharedDNS.srv != nil {
		sharedDNS.srv.stop()
		sharedDNS.srv = nil
	}
}

// dnsmasqConfig serves the zone's records and nothing else: no upstream, no /etc/hosts,
// bound to 127.0.0.1 only.
func dnsmasqConfig(port int) string {
	return strings.Join([]string{
		"port=" + strconv.Itoa(port),
		"listen-address=127.0.0.1",
		"bind-interfaces",
		"no-resolv", "no-hosts", "no-poll",
		"pid-file=",
		"log-facility=-",
		"local=/" + DNSZone + "/",
		"host-record=" + DNSHost + "," + DNSHostIPv4 + "," + DNSHostIPv6,
		"host-record=" + DNSTwoAddrs + ",192.0.2.21",
		"host-record=" + DNSTwoAddrs + ",192.0.2.22",
		"host-record=" + DNSMailHost + ",192.0.2.25",
		fmt.Sprintf("mx-host=%s,%s,%d", DNSZone, DNSMailHost, DNSMXPref),
		fmt.Sprintf("txt-record=%s,%q", DNSZone, DNSTXT),
	}, "\n") + "\n"
}

func startDnsmasq() (*Dnsmasq, error) {
	if _, err := os.Stat(dnsmasqBinary); err != nil {
		return nil, fmt.Errorf("%w: run scripts/ensure-dnsmasq.sh (make test-deps) to install dnsmasq", err)
	}
	dir, err := os.MkdirTemp("", "morse-dnsmasq-")
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 { // another process may take the free port before dnsmasq binds it
		ports, err := testutil.FreePorts("udp", 1)
		if err != nil {
			return nil, err
		}
		d := &Dnsmasq{Port: ports[0], done: make(chan struct{}), dir: dir}
		if last = d.start(); last == nil {
			return d, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, last
}

// start runs dnsmasq in the foreground and waits until it answers a query over UDP.
func (d *Dnsmasq) start() error {
	conf := filepath.Join(d.dir, "dnsmasq.conf")
	if err := os.WriteFile(conf, []byte(dnsmasqConfig(d.Port)), 0o600); err != nil {
		return err
	}
	logPath := filepath.Join(d.dir, fmt.Sprintf("dnsmasq-%d.log", d.Port))
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	// --keep-in-foreground so that the harness owns the process; --user keeps the user
	// the tests run as, which can read the config.
	d.cmd = exec.Command(dnsmasqBinary, "--keep-in-foreground", "--conf-file="+conf, "--user="+currentUser())
	d.cmd.Stdout, d.cmd.Stderr = lf, lf
	d.cmd.SysProcAttr = childAttr()
	err = d.cmd.Start()
	lf.Close()
	if err != nil {
		return fmt.Errorf("starting dnsmasq: %w", err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if d.answers() {
			return nil
		}
		select {
		case <-d.done:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("dnsmasq exited: %s", b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return fmt.Errorf("dnsmasq did not answer on port %d within 20s", d.Port)
		}
	}
}

// answers reports whether dnsmasq answers the zone's A record.
func (d *Dnsmasq) answers() bool {
	var m dns.Msg
	m.SetQuestion(dns.Fqdn(DNSHost), dns.TypeA)
	c := dns.Client{Timeout: 200 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, _, err := c.ExchangeContext(ctx, &m, d.Addr())
	return err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0
}

// Addr is 127.0.0.1:PORT.
func (d *Dnsmasq) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)) }

func (d *Dnsmasq) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Kill()
	<-d.done
}

// currentUser is the name of the user the tests run as, for dnsmasq's --user.
func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return "nobody"
}
