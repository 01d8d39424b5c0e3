package docker

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse/plugins/common/tlsclient"
)

// apiClient asks the Docker Engine API over HTTP on a unix socket or TCP. It holds one
// keep-alive connection per worker, so that a gather reuses its connections. Requests go
// to unversioned paths, which every daemon answers with its own latest API version.
type apiClient struct {
	http *http.Client
	base string // "http://docker" on a socket, else the daemon's http(s)://host:port
	bufs sync.Pool
}

// newAPIClient builds the client for endpoint: "unix:///path", "tcp://host:port" (TLS when
// tlsCfg is not nil) or "ENV" (DOCKER_HOST, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY).
func newAPIClient(endpoint string, tlsCfg *tls.Config, conns int) (*apiClient, error) {
	if endpoint == "ENV" {
		var err error
		if endpoint, tlsCfg, err = fromEnv(); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	tr := &http.Transport{
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // the daemon never compresses; asking costs a header
	}
	c := &apiClient{http: &http.Client{Transport: tr}}
	switch u.Scheme {
	case "unix":
		path := u.Path
		if path == "" {
			path = u.Host // unix://relative.sock
		}
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		}
		c.base = "http://docker"
	case "tcp", "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("endpoint %q has no host", endpoint)
		}
		scheme := "http"
		if tlsCfg != nil || u.Scheme == "https" {
			scheme = "https"
			tr.TLSClientConfig = tlsCfg
		}
		c.base = scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")
	default:
		return nil, fmt.Errorf("endpoint %q: use unix:///path, tcp://host:port or ENV", endpoint)
	}
	return c, nil
}

// fromEnv reads the endpoint and TLS settings as the Docker CLI does.
func fromEnv() (string, *tls.Config, error) {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	dir := os.Getenv("DOCKER_CERT_PATH")
	if dir == "" {
		return host, nil, nil
	}
	cfg := tlsclient.Config{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"),
		Key: filepath.Join(dir, "key.pem"), InsecureSkipVerify: os.Getenv("DOCKER_TLS_VERIFY") == ""}
	t, err := cfg.TLSConfig()
	if err != nil {
		return "", nil, fmt.Errorf("TLS from DOCKER_CERT_PATH: %w", err)
	}
	return host, t, nil
}

// closeIdle closes the kept connections.
func (c *apiClient) closeIdle() { c.http.CloseIdleConnections() }

// APIError is an answer of the daemon other than 200, with the message it gave.
type APIError struct {
	Path    string
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("GET %s: %d %s: %s", e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// get requests path and decodes the JSON answer into v. The body is read whole into a
// pooled buffer first: the answers are small, and one Unmarshal costs less than a Decoder.
func (c *apiClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf, _ := c.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() { buf.Reset(); c.bufs.Put(buf) }()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var msg struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(buf.Bytes(), &msg) != nil || msg.Message == "" {
			msg.Message = strings.TrimSpace(string(buf.Bytes()))
		}
		return &APIError{Path: path, Status: resp.StatusCode, Message: msg.Message}
	}
	if err := json.Unmarshal(buf.Bytes(), v); err != nil {
		return fmt.Errorf("GET %s: decoding the answer: %w", path, err)
	}
	return nil
}

// isNotFound reports whether the daemon answered 404: a container removed between the
// list and the inspect.
func isNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}
