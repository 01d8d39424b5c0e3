package syslog

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// testNow is the plugin's clock in tests: the year of RFC 3164 timestamps in Telegraf's
// expected outputs is 2026.
func testNow() time.Time { return time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) }

// started is a plugin running on a free loopback port (or a unix socket in a short
// temporary directory), its accumulator and its counters.
type started struct {
	p     *Syslog
	acc   *testutil.Accumulator
	stats *selfstat.PluginStats
	certs *testutil.Certs
}

// start decodes config (the body of [[inputs.syslog]]) into a plugin with the defaults,
// points a unix socket at a fresh path and a tls_cert at fresh certificates, and starts it.
func start(t *testing.T, config string) *started {
	t.Helper()
	p := New()
	md, err := toml.Decode(config, p)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys the plugin does not take")
	st := &started{p: p, acc: &testutil.Accumulator{}, stats: selfstat.NewPluginStats(nil, "internal_syslog", nil)}
	if strings.HasPrefix(p.Server, "unix") {
		scheme, _, _ := strings.Cut(p.Server, "://")
		p.Server = scheme + "://" + filepath.Join(testutil.SocketDir(t), "syslog.sock")
	}
	if p.Cert != "" {
		st.certs = testutil.NewCerts(t)
		p.Cert, p.Key = st.certs.ServerCert, st.certs.ServerKey
	}
	p.now = testNow
	p.SetStats(st.stats)
	require.NoError(t, p.Init())
	require.NoError(t, p.Start(context.Background(), st.acc))
	t.Cleanup(p.Stop)
	return st
}

// dial connects to the plugin, over TLS when it serves TLS.
func (st *started) dial(t *testing.T) net.Conn {
	t.Helper()
	addr := st.p.Addr()
	if st.certs == nil {
		c, err := net.Dial(addr.Network(), addr.String())
		require.NoError(t, err)
		return c
	}
	c, err := tls.Dial(addr.Network(), addr.String(), st.certs.ClientTLS(false))
	require.NoError(t, err)
	return c
}

// count is the value of one of the plugin's counters.
func (st *started) count(name string) int64 { return st.stats.Counter(name).Get() }

// sentinel is a datagram sent after a case's own, so that the test knows when the case's
// datagram has been handled: one socket's datagrams are read in order.
func (st *started) sentinel() string {
	if st.p.SyslogStandard == "RFC3164" {
		return "<13>Dec  2 16:31:03 host app: SENTINEL"
	}
	return "<1>1 - - - - - - SENTINEL"
}

// send writes in as one write of a stream, or one datagram, and waits until the plugin has
// handled all of it.
func (st *started) send(t *testing.T, in string) {
	t.Helper()
	c := st.dial(t)
	_, err := c.Write([]byte(in))
	require.NoError(t, err)
	if st.p.addr.Stream() {
		require.NoError(t, c.Close())
		require.Eventually(t, func() bool { return st.count("connections_closed") == 1 }, 10*time.Second, time.Millisecond)
		return
	}
	_, err = c.Write([]byte(st.sentinel()))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		ms := st.acc.Metrics()
		if len(ms) == 0 {
			return false
		}
		msg, _ := ms[len(ms)-1].Field("message")
		return msg.Str() == "SENTINEL"
	}, 10*time.Second, time.Millisecond)
}

// senderPort is the sender's port in an error, which changes from run to run.
var senderPort = regexp.MustCompile(`(127\.0\.0\.1|\[::1\]):\d+`)

// output is the metrics as line protocol at time 0, without the sentinel, then one
// "# error:" line for each expected error text that some reported error contains, and a
// line for every other error.
func (st *started) output(want string) string {
	var ms []morse.Metric
	for _, m := range st.acc.Metrics() {
		if msg, _ := m.Field("message"); msg.Str() != "SENTINEL" {
			ms = append(ms, m.WithTime(time.Unix(0, 0)))
		}
	}
	var b strings.Builder
	b.WriteString(testutil.Format(ms))
	errs := st.acc.Errors()
	matched := make([]bool, len(errs))
	for _, line := range strings.Split(want, "\n") {
		text, ok := strings.CutPrefix(line, "# error: ")
		if !ok {
			continue
		}
		found := false
		for i, err := range errs {
			if strings.Contains(err.Error(), text) {
				found, matched[i] = true, true
			}
		}
		if found {
			b.WriteString(line + "\n")
		} else {
			b.WriteString("# missing error: " + text + "\n")
		}
	}
	for i, err := range errs {
		if !matched[i] {
			b.WriteString("# other error: " + senderPort.ReplaceAllString(err.Error(), "$1:PORT") + "\n")
		}
	}
	return b.String()
}

// TestTelegrafCases runs Telegraf 1.39.3's own syslog test cases (its testcases directory,
// turned into golden files: its settings, the bytes its test sends, the metrics it expects
// and the error text it expects) over real sockets: UDP, TCP, TLS and unix, both framings,
// strict and best effort.
func TestTelegrafCases(t *testing.T) {
	for _, c := range testutil.Cases(t, "testdata/cases") {
		t.Run(c.Name, func(t *testing.T) {
			st := start(t, c.Config)
			// The in section ends with the line feed that precedes "-- out --".
			st.send(t, strings.TrimSuffix(c.In, "\n"))
			c.Check(t, st.output(c.Out))
		})
	}
}
