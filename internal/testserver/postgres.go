package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// PostgreSQL comes from Debian's postgresql package (scripts/ensure-dbservers.sh). The
// harness makes a cluster with initdb in a temporary directory and runs postgres on it as
// a child process, never the package's service: TCP on a free port of 127.0.0.1, with TLS
// offered (the server certificate of Certs), and a unix socket in the directory; fsync
// off. Its superuser is PostgresUser with PostgresPassword, checked with SCRAM over TCP and
// trusted over the socket. PostgreSQL refuses to run as root, so a root test process runs
// it as Debian's postgres account, which owns the directory.

// The superuser the harness creates.
const (
	PostgresUser     = "morse"
	PostgresPassword = "s3cret-pg"
)

// Postgres is a running postgres.
type Postgres struct {
	// Addr is 127.0.0.1:PORT; SocketDir the directory of its unix socket.
	Addr, SocketDir string
	Certs           *testutil.Certs

	proc *dbProc
}

// KeyValue is a key/value connection string of PostgresUser over TCP with extra appended.
func (p *Postgres) KeyValue(extra string) string {
	host, port, _ := net.SplitHostPort(p.Addr)
	return fmt.Sprintf("host=%s port=%s user=%s password=%s %s", host, port, PostgresUser, PostgresPassword, extra)
}

var sharedPostgres struct {
	mu  sync.Mutex
	p   *Postgres
	dir string
	err error
}

// SharedPostgres returns the test binary's postgres, started on first use; the package's
// TestMain calls StopSharedPostgres after m.Run.
func SharedPostgres(t testing.TB) *Postgres {
	t.Helper()
	s := &sharedPostgres
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil && s.err == nil {
		if s.dir, s.err = os.MkdirTemp("", "morse-postgres-"); s.err == nil {
			s.p, s.err = startPostgres(s.dir)
		}
	}
	require.NoError(t, s.err, "testserver: postgres did not start")
	return s.p
}

// StopSharedPostgres stops the postgres of SharedPostgres, if one was started.
func StopSharedPostgres() {
	s := &sharedPostgres
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		s.p.proc.stop()
		s.p = nil
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// postgresCredential is the account to run postgres as: nil when the test is not root,
// else Debian's postgres account, after giving it dir.
func postgresCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres refuses root and there is no postgres account: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, uid, gid)
	})
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, err
}

func startPostgres(dir string) (*Postgres, error) {
	bin, err := lookBinary("scripts/ensure-dbservers.sh", "/usr/lib/postgresql/*/bin/postgres")
	if err != nil {
		return nil, err
	}
	certs, err := testutil.WriteCerts(dir, "morse test client")
	if err != nil {
		return nil, err
	}
	pw := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pw, []byte(PostgresPassword+"\n"), 0o600); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, err
	}
	cred, err := postgresCredential(dir)
	if err != nil {
		return nil, err
	}
	initdb := exec.Command(filepath.Join(filepath.Dir(bin), "initdb"), "-D", data, "-U", PostgresUser, "--pwfile="+pw,
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return retryPorts(func() (*Postgres, error) {
		ports, err := testutil.FreePorts("tcp", 1)
		if err != nil {
			return nil, err
		}
		p := &Postgres{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), SocketDir: dir, Certs: certs}
		p.proc, err = startDBProc("postgres", dir, cred, []string{p.Addr}, bin, "-D", data, "-k", dir,
			"-p", strconv.Itoa(ports[0]), "-h", "127.0.0.1", "-c", "fsync=off", "-c", "ssl=on",
			"-c", "ssl_cert_file="+certs.ServerCert, "-c", "ssl_key_file="+certs.ServerKey)
		if err == nil && p.proc == nil {
			err = errors.New("postgres did not start")
		}
		return p, err
	}, "Address already in use", "could not bind")
}
