package testserver

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers "mysql" for database/sql
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// MariaDB comes from Debian's mariadb-server package (scripts/ensure-dbservers.sh). The
// harness makes a data directory with mariadb-install-db in a temporary directory and runs
// mariadbd on it as a child process, never the package's service: TCP on a free port of
// 127.0.0.1 (TLS offered with the server certificate of Certs) and a unix socket, small
// InnoDB files, the performance schema and user statistics on, the binary log on. It
// creates MariaDBUser with MariaDBPassword (all privileges) and the database MariaDBDatabase
// with a table that has an AUTO_INCREMENT column.

// The account and database the harness creates.
const (
	MariaDBUser     = "morse"
	MariaDBPassword = "s3cret-maria"
	MariaDBDatabase = "morse_test"
)

// MariaDB is a running mariadbd.
type MariaDB struct {
	// Addr is 127.0.0.1:PORT; Socket the unix socket's path.
	Addr, Socket string
	Certs        *testutil.Certs

	proc *dbProc
}

// DSN is the go-sql-driver DSN of MariaDBUser over TCP, with params ("tls=false") appended.
func (m *MariaDB) DSN(params string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/?%s", MariaDBUser, MariaDBPassword, m.Addr, params)
}

// Exec runs statements as root over the unix socket.
func (m *MariaDB) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	require.NoError(t, m.exec(stmts...))
}

func (m *MariaDB) exec(stmts ...string) error {
	db, err := sql.Open("mysql", "root@unix("+m.Socket+")/")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

var sharedMariaDB struct {
	mu  sync.Mutex
	m   *MariaDB
	dir string
	err error
}

// SharedMariaDB returns the test binary's mariadbd, started on first use; the package's
// TestMain calls StopSharedMariaDB after m.Run.
func SharedMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	s := &sharedMariaDB
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil && s.err == nil {
		if s.dir, s.err = os.MkdirTemp("", "morse-mariadb-"); s.err == nil {
			s.m, s.err = startMariaDB(s.dir)
		}
	}
	require.NoError(t, s.err, "testserver: mariadbd did not start")
	return s.m
}

// StopSharedMariaDB stops the mariadbd of SharedMariaDB, if one was started.
func StopSharedMariaDB() {
	s := &sharedMariaDB
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m != nil {
		s.m.proc.stop()
		s.m = nil
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// mariadbSmall are the options that keep the data directory and the memory small.
var mariadbSmall = []string{"--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M", "--innodb-undo-tablespaces=0"}

func startMariaDB(dir string) (*MariaDB, error) {
	bin, err := lookBinary("scripts/ensure-dbservers.sh", "/usr/sbin/mariadbd")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	install := exec.Command("mariadb-install-db", append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=socket", "--skip-test-db", "--user=root"}, mariadbSmall...)...)
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	certs, err := testutil.WriteCerts(dir, "morse test client")
	if err != nil {
		return nil, err
	}
	m, err := retryPorts(func() (*MariaDB, error) {
		ports, err := testutil.FreePorts("tcp", 1)
		if err != nil {
			return nil, err
		}
		m := &MariaDB{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			Socket: filepath.Join(dir, "mysqld.sock"), Certs: certs}
		args := append([]string{"--no-defaults", "--datadir=" + data, "--socket=" + m.Socket,
			"--port=" + strconv.Itoa(ports[0]), "--bind-address=127.0.0.1", "--skip-networking=0",
			"--user=root", "--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--skip-name-resolve",
			"--performance-schema=ON", "--userstat=1", "--log-bin=" + filepath.Join(dir, "binlog"), "--server-id=1",
			"--ssl-cert=" + certs.ServerCert, "--ssl-key=" + certs.ServerKey, "--ssl-ca=" + certs.CA,
			"--log-error=" + filepath.Join(dir, "mariadb.log")}, mariadbSmall...)
		m.proc, err = startDBProc("mariadb", dir, nil, []string{m.Addr}, bin, args...)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "mariadb.log"))
			err = fmt.Errorf("%w\n%s", err, log)
		}
		return m, err
	}, "Address already in use", "Can't start server: Bind")
	if err != nil {
		return nil, err
	}
	if err := m.setup(); err != nil {
		m.proc.stop()
		return nil, err
	}
	return m, nil
}

// setup creates the account and the database, waiting for the socket first.
func (m *MariaDB) setup() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := m.exec("SELECT 1")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd's socket: %w", err)
		}
		select {
		case <-m.proc.done:
			return fmt.Errorf("mariadbd exited: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return m.exec(
		"CREATE USER '"+MariaDBUser+"'@'%' IDENTIFIED BY '"+MariaDBPassword+"'",
		"GRANT ALL PRIVILEGES ON *.* TO '"+MariaDBUser+"'@'%'",
		"CREATE DATABASE "+MariaDBDatabase,
		"CREATE TABLE "+MariaDBDatabase+".items (id INT UNSIGNED AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40), KEY by_name (name)) ENGINE=InnoDB",
		"INSERT INTO "+MariaDBDatabase+".items (name) VALUES ('a'), ('b'), ('c')",
	)
}
