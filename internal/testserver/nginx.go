package testserver

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// nginx 1.22.1 comes from Debian bookworm's nginx package, which scripts/ensure-nginx.sh
// unpacks into the user's cache. StartNginx runs it as one process (master_process off)
// with a generated config: a plain and a TLS server on free ports of 127.0.0.1 (the TLS one
// with the test CA's server certificate, and client certificates checked on /mtls), static
// files, fixed answers, auth checks, an OAuth2 token endpoint with a fixed answer, and
// /slow, which nginx proxies to a port that accepts connections and never answers, for
// timeouts, and /server_status, nginx's stub_status page. A third server listens on a unix
// socket (Socket) with the same locations. Its access log records each request's method, URI, Authorization header, one
// test header and body (AccessLog).

// NginxVersion is the version the harness runs.
const NginxVersion = "1.22.1"

// Credentials the generated config checks.
const (
	NginxUser         = "morse"
	NginxPassword     = "s3cret"
	NginxBearerToken  = "bearer-token-1"
	NginxClientID     = "morse-client"
	NginxClientSecret = "client-secret"
	NginxOAuthToken   = "oauth-token-1"
)

// NginxFiles are the static files the servers serve from their root, by name.
var NginxFiles = map[string]string{
	"index.html":     "<html><body>hello from nginx</body></html>\n",
	"metrics.influx": "nginx_test,source=file value=1i,ok=true\nnginx_test,source=file value=2i\n",
	"metrics.json":   `{"value": 42, "name": "from json"}` + "\n",
	"bad.influx":     "nginx_test value=1i\nthis is not line protocol\nnginx_test value=3i\n",
}

// Nginx is a running nginx.
type Nginx struct {
	// Addr and TLSAddr are 127.0.0.1:PORT of the plain and the TLS server.
	Addr, TLSAddr string
	// Certs are the test CA and certificates the TLS server uses.
	Certs *testutil.Certs

	dir       string
	extra     string // more locations for every server (the php-fpm harness's)
	cmd       *exec.Cmd
	done      chan struct{}
	blackhole net.Listener
}

// URL is http://Addr+path; HTTPSURL is https://TLSAddr+path.
func (n *Nginx) URL(path string) string      { return "http://" + n.Addr + path }
func (n *Nginx) HTTPSURL(path string) string { return "https://" + n.TLSAddr + path }

// Socket is the path of the unix socket the third server listens on.
func (n *Nginx) Socket() string { return filepath.Join(n.dir, "nginx.sock") }

// BlackholeAddr is 127.0.0.1:PORT of a listener that accepts connections (the kernel
// completes them) and never reads or answers.
func (n *Nginx) BlackholeAddr() string { return n.blackhole.Addr().String() }

// AccessLog returns the access log's lines so far: "METHOD URI auth=AUTHORIZATION
// special=X-SPECIAL body=BODY", "-" for what a request lacks.
func (n *Nginx) AccessLog(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dir, "access.log"))
	require.NoError(t, err)
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

var sharedNginx struct {
	mu  sync.Mutex
	n   *Nginx
	err error
}

// SharedNginx returns the test binary's nginx, starting it on first use; StopSharedNginx,
// from TestMain, ends it, and the kernel kills it if the test process dies first. It fails
// the test when nginx cannot start.
func SharedNginx(t testing.TB) *Nginx {
	t.Helper()
	sharedNginx.mu.Lock()
	defer sharedNginx.mu.Unlock()
	if sharedNginx.n == nil && sharedNginx.err == nil {
		sharedNginx.n, sharedNginx.err = startNginx("")
	}
	require.NoError(t, sharedNginx.err, "testserver: nginx did not start")
	return sharedNginx.n
}

// StopSharedNginx stops the shared nginx, if it runs.
func StopSharedNginx() {
	sharedNginx.mu.Lock()
	defer sharedNginx.mu.Unlock()
	if sharedNginx.n != nil {
		sharedNginx.n.stop()
		sharedNginx.n = nil
	}
}

// startNginx starts an nginx whose servers also serve the locations in extra.
func startNginx(extra string) (*Nginx, error) {
	bin, err := cachedBinary("MORSE_NGINX", "nginx", NginxVersion, "nginx", "scripts/ensure-nginx.sh")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "morse-nginx-")
	if err != nil {
		return nil, err
	}
	certs, err := testutil.WriteCerts(dir, "morse test client")
	if err != nil {
		return nil, err
	}
	if err := writeNginxFiles(dir); err != nil {
		return nil, err
	}
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 { // another process may take a free port before nginx binds it
		ports, err := testutil.FreePorts("tcp", 2)
		if err != nil {
			return nil, err
		}
		n := &Nginx{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), TLSAddr: "127.0.0.1:" + strconv.Itoa(ports[1]),
			Certs: certs, dir: dir, extra: extra, blackhole: hole, done: make(chan struct{})}
		if last = n.start(bin); last == nil {
			return n, nil
		}
		if !strings.Contains(last.Error(), "Address already in use") {
			break
		}
	}
	_ = hole.Close()
	return nil, last
}

func writeNginxFiles(dir string) error {
	var errs []error
	for _, d := range []string{"root/auth", "tmp"} {
		errs = append(errs, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for name, body := range NginxFiles {
		errs = append(errs, os.WriteFile(filepath.Join(dir, "root", name), []byte(body), 0o644),
			os.WriteFile(filepath.Join(dir, "root", "auth", name), []byte(body), 0o644))
	}
	// nginx reads {PLAIN} passwords in an htpasswd file.
	errs = append(errs, os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(NginxUser+":{PLAIN}"+NginxPassword+"\n"), 0o644))
	return errors.Join(errs...)
}

func (n *Nginx) start(bin string) error {
	conf := filepath.Join(n.dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(n.config()), 0o644); err != nil {
		return err
	}
	logFile := filepath.Join(n.dir, "error.log")
	n.cmd = exec.Command(bin, "-p", n.dir, "-c", conf, "-e", logFile)
	n.cmd.Stdout, n.cmd.Stderr = io.Discard, io.Discard
	n.cmd.SysProcAttr = childAttr()
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	if err := n.waitReady(30 * time.Second); err != nil {
		n.stop()
		log, _ := os.ReadFile(logFile)
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// waitReady waits until both servers answer /index.html.
func (n *Nginx) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: n.Certs.ClientTLS(false)}}
	defer hc.CloseIdleConnections()
	for {
		ok := 0
		for _, u := range []string{n.URL("/index.html"), n.HTTPSURL("/index.html")} {
			if resp, err := hc.Get(u); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok++
				}
			}
		}
		if ok == 2 {
			return nil
		}
		select {
		case <-n.done:
			return errors.New("nginx exited before answering")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nginx did not answer on %s and %s within %s", n.Addr, n.TLSAddr, timeout)
		}
	}
}

func (n *Nginx) stop() {
	select {
	case <-n.done:
	default:
		_ = n.cmd.Process.Kill() // one process, no state worth a graceful stop
		<-n.done
	}
	_ = n.blackhole.Close()
	_ = os.RemoveAll(n.dir)
}

// ClientTLS is a client config that trusts the test CA, with the client certificate.
func (n *Nginx) ClientTLS() *tls.Config { return n.Certs.ClientTLS(true) }

func (n *Nginx) config() string {
	basic := base64.StdEncoding.EncodeToString([]byte(NginxClientID + ":" + NginxClientSecret))
	r := strings.NewReplacer("DIR", n.dir, "ADDR", n.Addr, "TLSADDR", n.TLSAddr, "HOLE", n.BlackholeAddr(),
		"CERT", n.Certs.ServerCert, "KEY", n.Certs.ServerKey, "CA", n.Certs.CA,
		"BEARER", NginxBearerToken, "OAUTHTOKEN", NginxOAuthToken, "CLIENTBASIC", basic)
	conf := r.Replace(strings.ReplaceAll(nginxConfig, "LOCATIONS", nginxLocations+"#EXTRA#"))
	// extra is inserted as it is: the placeholders above must not touch its words.
	return strings.ReplaceAll(conf, "#EXTRA#", n.extra)
}

// nginxLocations are what both servers serve.
const nginxLocations = `
    root DIR/root;
    location / { }
    location = /status/404 { return 404 "not here\n"; }
    location = /status/500 { return 500 "broken\n"; }
    location = /server_status { stub_status; }
    location = /redirect { return 302 /index.html; }
    location = /slow { proxy_pass http://HOLE; proxy_read_timeout 60s; }
    location = /post { proxy_pass http://ADDR/posted; }
    location = /posted { return 200 "posted value=1i\n"; }
    location /auth/basic/ {
      auth_basic "morse";
      auth_basic_user_file DIR/htpasswd;
      alias DIR/root/auth/;
    }
    location /auth/bearer/ {
      if ($http_authorization != "Bearer BEARER") { return 401 "bad token\n"; }
      alias DIR/root/auth/;
    }
    location /auth/oauth/ {
      if ($http_authorization != "Bearer OAUTHTOKEN") { return 401 "bad token\n"; }
      alias DIR/root/auth/;
    }
    location = /oauth/token {
      default_type application/json;
      if ($request_method != POST) { return 405; }
      if ($http_authorization != "Basic CLIENTBASIC") { return 401 '{"error":"invalid_client"}'; }
      return 200 '{"access_token":"OAUTHTOKEN","token_type":"bearer","expires_in":3600}';
    }
`

const nginxConfig = `daemon off;
master_process off;
worker_processes 1;
pid DIR/nginx.pid;
error_log DIR/error.log warn;
events { worker_connections 256; }
http {
  types { text/html html; application/json json; text/plain influx; }
  default_type text/plain;
  log_format probe '$request_method $request_uri auth=$http_authorization special=$http_x_special body=$request_body';
  access_log DIR/access.log probe;
  client_body_temp_path DIR/tmp/body;
  proxy_temp_path DIR/tmp/proxy;
  fastcgi_temp_path DIR/tmp/fastcgi;
  uwsgi_temp_path DIR/tmp/uwsgi;
  scgi_temp_path DIR/tmp/scgi;
  server {
    listen ADDR;
LOCATIONS  }
  server {
    listen unix:DIR/nginx.sock;
LOCATIONS  }
  server {
    listen TLSADDR ssl;
    ssl_certificate CERT;
    ssl_certificate_key KEY;
    ssl_client_certificate CA;
    ssl_verify_client optional;
    location = /mtls {
      if ($ssl_client_verify != SUCCESS) { return 403 "no client certificate\n"; }
      return 200 "mtls_test value=1i\n";
    }
LOCATIONS  }
}
`
