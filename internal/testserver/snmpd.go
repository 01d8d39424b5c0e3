package testserver

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// snmpd comes from Debian's snmpd package (scripts/ensure-snmp.sh, with snmp and
// libsnmp-base). The harness runs it as a child process, never the package's service, with
// a generated config on a free UDP port of 127.0.0.1: community SnmpdCommunity for v1 and
// v2c, the SNMPv3 users of SnmpdUsers, and `override` lines that serve MORSE-TEST-MIB
// (snmpmibs/, written into MIBDir with the base modules Debian does not ship): an
// interface-like table of SnmpdRows rows, a port table of SnmpdPorts rows that points into
// it, and a scalar. snmpd serves overrides from memory, so a walk of the whole table costs
// the agent little. Its own MIB-II (system, ifTable of this machine's interfaces) is served
// beside them.

//go:embed snmpmibs/*.txt
var snmpMIBs embed.FS

// SnmpdCommunity is the read-only community of v1 and v2c.
const SnmpdCommunity = "public"

// SnmpdRows and SnmpdPorts are the sizes of mtIfTable and mtPortTable.
const (
	SnmpdRows  = 1000
	SnmpdPorts = 10
)

// Numeric OIDs of MORSE-TEST-MIB.
const (
	SnmpdTestMIB   = ".1.3.6.1.4.1.8072.9999.9999.1"
	SnmpdIfEntry   = SnmpdTestMIB + ".1.1"
	SnmpdSysName   = SnmpdTestMIB + ".2.0"
	SnmpdPortEntry = SnmpdTestMIB + ".4.1"
	SnmpdLinkDown  = SnmpdTestMIB + ".3.1"
	// SnmpdSysNameValue is mtSysName.0's value.
	SnmpdSysNameValue = "morse-test-agent"
)

// SnmpdUser is one SNMPv3 user of the generated config.
type SnmpdUser struct {
	Name, Auth, AuthPass, Priv, PrivPass string
	// Level is "noAuthNoPriv", "authNoPriv" or "authPriv".
	Level string
}

// SnmpdUsers are the v3 users, one per protocol pair the tests use. Auth and Priv are
// spelled as Telegraf's auth_protocol and priv_protocol take them.
var SnmpdUsers = []SnmpdUser{
	{Name: "noauth", Level: "noAuthNoPriv"},
	{Name: "md5only", Auth: "MD5", AuthPass: "md5-password", Level: "authNoPriv"},
	{Name: "md5des", Auth: "MD5", AuthPass: "md5-password", Priv: "DES", PrivPass: "des-password", Level: "authPriv"},
	{Name: "shaaes", Auth: "SHA", AuthPass: "sha-password", Priv: "AES", PrivPass: "aes-password", Level: "authPriv"},
	{Name: "sha256aes192", Auth: "SHA256", AuthPass: "sha256-password", Priv: "AES192", PrivPass: "aes192-password", Level: "authPriv"},
	{Name: "sha512aes256", Auth: "SHA512", AuthPass: "sha512-password", Priv: "AES256", PrivPass: "aes256-password", Level: "authPriv"},
}

// SnmpdIfRow is row i (1..SnmpdRows) of mtIfTable as the agent serves it.
type SnmpdIfRow struct {
	Descr       string
	Type        int // 6 ethernetCsmacd, 24 softwareLoopback every hundredth row
	Speed       uint
	InOctets    uint
	LastChange  uint32
	Address     [4]byte
	PhysAddress [6]byte
	OperStatus  int // 1 up on odd rows, 2 down on even rows
	Temperature int // tenths of a degree
	Load        string
}

// SnmpdIf returns row i of mtIfTable.
func SnmpdIf(i int) SnmpdIfRow {
	r := SnmpdIfRow{Descr: "eth" + strconv.Itoa(i), Type: 6, Speed: 1_000_000_000, InOctets: uint(i) * 1000,
		LastChange: uint32(i) * 100, Address: [4]byte{10, 0, byte(i >> 8), byte(i)},
		PhysAddress: [6]byte{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)},
		OperStatus:  2 - i%2, Temperature: 200 + i%100, Load: fmt.Sprintf("%d.%02d", i/100, i%100)}
	if i%100 == 0 {
		r.Type = 24
	}
	return r
}

// SnmpdPortIf is the mtIfIndex port p (1..SnmpdPorts) points to; its name is "port<p>".
func SnmpdPortIf(p int) int { return 2 * p }

// Snmpd is a running snmpd.
type Snmpd struct {
	// Addr is 127.0.0.1:PORT (UDP).
	Addr string
	// MIBDir holds MORSE-TEST-MIB and the base modules it imports; give it before
	// /usr/share/snmp/mibs in a translator's path.
	MIBDir string

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// SnmpdBinary returns snmpd's path: $MORSE_SNMPD or Debian's /usr/sbin/snmpd.
func SnmpdBinary() (string, error) {
	if p := os.Getenv("MORSE_SNMPD"); p != "" {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/snmpd"); err != nil {
		return "", errors.New("no snmpd: run scripts/ensure-snmp.sh (make test-deps) to install Debian's snmpd, snmp and libsnmp-base")
	}
	return "/usr/sbin/snmpd", nil
}

// SnmptrapBinary returns the path of Net-SNMP's snmptrap from Debian's snmp package.
func SnmptrapBinary() (string, error) {
	p, err := exec.LookPath("snmptrap")
	if err != nil {
		return "", fmt.Errorf("no snmptrap: run scripts/ensure-snmp.sh (make test-deps): %w", err)
	}
	return p, nil
}

var sharedSnmpd struct {
	mu  sync.Mutex
	s   *Snmpd
	err error
}

// SharedSnmpd returns the test binary's snmpd, starting it on first use; StopSharedSnmpd,
// from TestMain, ends it, and the kernel kills it if the test process dies first.
func SharedSnmpd(t testing.TB) *Snmpd {
	t.Helper()
	sharedSnmpd.mu.Lock()
	defer sharedSnmpd.mu.Unlock()
	if sharedSnmpd.s == nil && sharedSnmpd.err == nil {
		sharedSnmpd.s, sharedSnmpd.err = startSnmpd()
	}
	require.NoError(t, sharedSnmpd.err, "testserver: snmpd did not start")
	return sharedSnmpd.s
}

// StopSharedSnmpd stops the shared snmpd, if it runs.
func StopSharedSnmpd() {
	sharedSnmpd.mu.Lock()
	defer sharedSnmpd.mu.Unlock()
	if sharedSnmpd.s != nil {
		sharedSnmpd.s.stop()
		sharedSnmpd.s = nil
	}
}

// WriteSnmpMIBs writes MORSE-TEST-MIB and the base modules into dir, for a test that needs
// the MIBs without an agent (snmp_trap's).
func WriteSnmpMIBs(dir string) error {
	ents, err := snmpMIBs.ReadDir("snmpmibs")
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := snmpMIBs.ReadFile("snmpmibs/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func startSnmpd() (*Snmpd, error) {
	bin, err := SnmpdBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "morse-snmpd-")
	if err != nil {
		return nil, err
	}
	mibs := filepath.Join(dir, "mibs")
	if err := errors.Join(os.Mkdir(mibs, 0o755), os.Mkdir(filepath.Join(dir, "state"), 0o700)); err != nil {
		return nil, err
	}
	if err := WriteSnmpMIBs(mibs); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "snmpd.conf")
	if err := os.WriteFile(conf, []byte(snmpdConfig()), 0o600); err != nil {
		return nil, err
	}
	var last error
	for range 3 { // another process may take the free port before snmpd binds it
		ports, err := testutil.FreePorts("udp", 1)
		if err != nil {
			return nil, err
		}
		s := &Snmpd{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), MIBDir: mibs, dir: dir, done: make(chan struct{})}
		if last = s.start(bin, conf); last == nil {
			return s, nil
		}
		if !strings.Contains(last.Error(), "Error opening specified endpoint") {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, last
}

func (s *Snmpd) start(bin, conf string) error {
	logFile := filepath.Join(s.dir, "snmpd.log")
	// -C: no other config file; -Lf: log to a file; no MIBs parsed (the overrides are
	// numeric), the persistent state (engine boots, keys of createUser) in the temporary dir.
	s.cmd = exec.Command(bin, "-f", "-C", "-c", conf, "-Lf", logFile, "udp:"+s.Addr)
	s.cmd.Env = append(os.Environ(), "SNMP_PERSISTENT_DIR="+filepath.Join(s.dir, "state"), "MIBS=", "MIBDIRS="+s.MIBDir)
	s.cmd.Stdout, s.cmd.Stderr = io.Discard, io.Discard
	s.cmd.SysProcAttr = childAttr()
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.kill()
		log, _ := os.ReadFile(logFile)
		return fmt.Errorf("%w\n%s", err, tail(string(log), 2000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitReady waits until mtSysName.0 answers over v2c.
func (s *Snmpd) waitReady(timeout time.Duration) error {
	port, _ := strconv.Atoi(s.Addr[strings.LastIndexByte(s.Addr, ':')+1:])
	g := &gosnmp.GoSNMP{Target: "127.0.0.1", Port: uint16(port), Community: SnmpdCommunity,
		Version: gosnmp.Version2c, Timeout: 100 * time.Millisecond}
	if err := g.Connect(); err != nil {
		return err
	}
	defer g.Conn.Close()
	deadline := time.Now().Add(timeout)
	for {
		if p, err := g.Get([]string{SnmpdSysName}); err == nil && len(p.Variables) == 1 && p.Variables[0].Type == gosnmp.OctetString {
			return nil
		}
		select {
		case <-s.done:
			return errors.New("snmpd exited before answering")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("snmpd did not answer on %s within %s", s.Addr, timeout)
		}
	}
}

func (s *Snmpd) kill() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill() // nothing of its state is worth a graceful stop
		<-s.done
	}
}

func (s *Snmpd) stop() {
	s.kill()
	_ = os.RemoveAll(s.dir)
}

// snmpdConfig is the generated snmpd.conf: access, users and the test MIB's values.
func snmpdConfig() string {
	var b strings.Builder
	b.WriteString("rocommunity " + SnmpdCommunity + " 127.0.0.1\n")
	for _, u := range SnmpdUsers {
		b.WriteString(snmpdUser(u))
	}
	fmt.Fprintf(&b, "override %s octet_str %q\n", SnmpdSysName, SnmpdSysNameValue)
	e := SnmpdIfEntry
	for i := 1; i <= SnmpdRows; i++ {
		r := SnmpdIf(i)
		fmt.Fprintf(&b, "override %s.1.%d integer %d\n", e, i, i)
		fmt.Fprintf(&b, "override %s.2.%d octet_str %q\n", e, i, r.Descr)
		fmt.Fprintf(&b, "override %s.3.%d integer %d\n", e, i, r.Type)
		fmt.Fprintf(&b, "override %s.4.%d uinteger %d\n", e, i, r.Speed)
		fmt.Fprintf(&b, "override %s.5.%d counter %d\n", e, i, r.InOctets)
		fmt.Fprintf(&b, "override %s.6.%d timeticks %d\n", e, i, r.LastChange)
		fmt.Fprintf(&b, "override %s.7.%d octet_str 0x%x\n", e, i, r.Address[:])
		fmt.Fprintf(&b, "override %s.8.%d octet_str 0x%x\n", e, i, r.PhysAddress[:])
		fmt.Fprintf(&b, "override %s.9.%d integer %d\n", e, i, r.OperStatus)
		fmt.Fprintf(&b, "override %s.10.%d integer %d\n", e, i, r.Temperature)
		fmt.Fprintf(&b, "override %s.11.%d octet_str %q\n", e, i, r.Load)
	}
	for p := 1; p <= SnmpdPorts; p++ {
		fmt.Fprintf(&b, "override %s.1.%d integer %d\n", SnmpdPortEntry, p, p)
		fmt.Fprintf(&b, "override %s.2.%d integer %d\n", SnmpdPortEntry, p, SnmpdPortIf(p))
		fmt.Fprintf(&b, "override %s.3.%d octet_str \"port%d\"\n", SnmpdPortEntry, p, p)
	}
	return b.String()
}

// snmpdUser is the createUser and rouser lines of one v3 user. Net-SNMP spells the
// protocols SHA-256 and AES-192 where Telegraf's options say SHA256 and AES192.
func snmpdUser(u SnmpdUser) string {
	netsnmp := func(p string) string {
		switch p {
		case "SHA224", "SHA256", "SHA384", "SHA512":
			return "SHA-" + p[3:]
		case "AES192", "AES256":
			return "AES-" + p[3:]
		}
		return p
	}
	line := "createUser " + u.Name
	level := "noauth"
	if u.Auth != "" {
		line += fmt.Sprintf(" %s %q", netsnmp(u.Auth), u.AuthPass)
		level = "auth"
	}
	if u.Priv != "" {
		line += fmt.Sprintf(" %s %q", netsnmp(u.Priv), u.PrivPass)
		level = "priv"
	}
	return line + "\nrouser " + u.Name + " " + level + "\n"
}
