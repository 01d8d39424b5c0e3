package testserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// Redis comes from Debian's redis-server package (scripts/ensure-dbservers.sh). The harness
// runs it as a child process with a config of its own, never the package's service: a plain
// and a TLS port on 127.0.0.1 (the TLS one with the server certificate of Certs, no client
// certificate asked for), a unix socket, no persistence, and two accounts: the default user
// without a password and RedisUser with RedisPassword (ACL).

// RedisUser and RedisPassword are the ACL account that the harness creates.
const (
	RedisUser     = "morse"
	RedisPassword = "s3cret-redis"
)

// Redis is a running redis-server.
type Redis struct {
	// Addr and TLSAddr are 127.0.0.1:PORT of the plain and the TLS port; Socket is the
	// unix socket's path.
	Addr, TLSAddr, Socket string
	Certs                 *testutil.Certs

	proc *dbProc
}

var sharedRedis struct {
	mu  sync.Mutex
	r   *Redis
	dir string
	err error
}

// SharedRedis returns the test binary's redis-server, started on first use; the package's
// TestMain calls StopSharedRedis after m.Run.
func SharedRedis(t testing.TB) *Redis {
	t.Helper()
	s := &sharedRedis
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r == nil && s.err == nil {
		if s.dir, s.err = os.MkdirTemp("", "morse-redis-"); s.err == nil {
			s.r, s.err = startRedis(s.dir)
		}
	}
	require.NoError(t, s.err, "testserver: redis-server did not start")
	return s.r
}

// StopSharedRedis stops the redis-server of SharedRedis, if one was started.
func StopSharedRedis() {
	s := &sharedRedis
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		s.r.proc.stop()
		s.r = nil
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

func startRedis(dir string) (*Redis, error) {
	bin, err := lookBinary("scripts/ensure-dbservers.sh", "/usr/bin/redis-server", "/usr/local/bin/redis-server")
	if err != nil {
		return nil, err
	}
	certs, err := testutil.WriteCerts(dir, "morse test client")
	if err != nil {
		return nil, err
	}
	return retryPorts(func() (*Redis, error) {
		ports, err := testutil.FreePorts("tcp", 2)
		if err != nil {
			return nil, err
		}
		r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			TLSAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
			Socket:  filepath.Join(dir, "redis.sock"), Certs: certs}
		conf := filepath.Join(dir, "redis.conf")
		body := fmt.Sprintf(`# written by internal/testserver
bind 127.0.0.1
port %d
tls-port %d
tls-cert-file %s
tls-key-file %s
tls-ca-cert-file %s
tls-auth-clients no
unixsocket %s
unixsocketperm 700
dir %s
save ""
appendonly no
daemonize no
user default on nopass ~* &* +@all
user %s on >%s ~* &* +@all
`, ports[0], ports[1], certs.ServerCert, certs.ServerKey, certs.CA, r.Socket, dir, RedisUser, RedisPassword)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, err
		}
		r.proc, err = startDBProc("redis", dir, nil, []string{r.Addr, r.TLSAddr}, bin, conf)
		return r, err
	}, "Address already in use")
}
