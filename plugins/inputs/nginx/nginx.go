// Package nginx is the inputs.nginx plugin: every interval it reads nginx's stub_status page
// (ngx_http_stub_status_module) from each URL, over TCP or a unix socket (http+unix://), and
// reports Telegraf 1.39.3's measurement nginx: tags server and port, unsigned fields active,
// accepts, handled, requests, reading, writing and waiting.
//
// A URL that cannot be requested, answers other than 200 or with a page that is not a
// stub_status page is reported through acc.AddError with the URL; the others are gathered.
package nginx

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/httpclient"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read Nginx's basic status information (ngx_http_stub_status_module)"

//go:embed sample.conf
var sampleConfig string

// Nginx is the inputs.nginx plugin and its configuration. Build it with New.
type Nginx struct {
	// URLs are the stub_status pages: http://, https://, http+unix:// or https+unix://.
	URLs []string `toml:"urls"`
	// HTTPClientConfig is Telegraf's common client: timeout, response_timeout, TLS, proxy.
	httpclient.HTTPClientConfig

	client *http.Client
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input       = (*Nginx)(nil)
	_ morse.Validator   = (*Nginx)(nil)
	_ morse.Initializer = (*Nginx)(nil)
)

// New returns the plugin with Telegraf's defaults.
func New() *Nginx { return &Nginx{} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "nginx",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (n *Nginx) Validate() error {
	errs := []error{n.HTTPClientConfig.Validate()}
	for _, raw := range n.URLs {
		if _, err := url.Parse(raw); err != nil {
			errs = append(errs, morse.Errorf("urls", "%q: %v", raw, err))
		}
	}
	return errors.Join(errs...)
}

// Init builds the client. As in Telegraf, a response_timeout under a second is 5s.
func (n *Nginx) Init() error {
	if n.ResponseHeaderTimeout < morse.Duration(time.Second) {
		n.ResponseHeaderTimeout = morse.Duration(5 * time.Second)
	}
	client, err := n.Client(context.Background())
	if err != nil {
		return fmt.Errorf("creating client failed: %w", err)
	}
	n.client = client
	return nil
}

// Gather requests every URL at once and waits for all of them.
func (n *Nginx) Gather(ctx context.Context, acc morse.Accumulator) error {
	if n.client == nil {
		if err := n.Init(); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for _, u := range n.URLs {
		addr, err := url.Parse(u)
		if err != nil {
			acc.AddError(fmt.Errorf("unable to parse address %q: %w", u, err))
			continue
		}
		wg.Go(func() {
			if err := n.gatherURL(ctx, acc, addr); err != nil {
				acc.AddError(err)
			}
		})
	}
	wg.Wait()
	return nil
}

func (n *Nginx) gatherURL(ctx context.Context, acc morse.Accumulator, addr *url.URL) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr.String(), nil)
	if err != nil {
		return fmt.Errorf("error making HTTP request to %q: %w", addr, err)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("error making HTTP request to %q: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s returned HTTP status %s", addr, resp.Status)
	}
	fields, err := parseStubStatus(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("%s: not a stub_status page: %w", addr, err)
	}
	acc.AddFields("nginx", fields, tags(addr))
	return nil
}

// parseStubStatus reads the four lines of a stub_status page:
//
//	Active connections: 1
//	server accepts handled requests
//	 7 7 9
//	Reading: 0 Writing: 1 Waiting: 0
func parseStubStatus(r io.Reader) (map[string]any, error) {
	sc := bufio.NewScanner(r)
	var lines []string
	for sc.Scan() && len(lines) < 4 {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(lines) < 4 {
		return nil, fmt.Errorf("%d lines, want 4", len(lines))
	}
	_, active, ok := strings.Cut(lines[0], ":")
	counts := strings.Fields(lines[2])
	rww := strings.Fields(lines[3])
	if !ok || len(counts) != 3 || len(rww) != 6 {
		return nil, fmt.Errorf("unexpected lines %q", lines)
	}
	fields := make(map[string]any, 7)
	for _, f := range []struct{ key, text string }{
		{"active", strings.TrimSpace(active)}, {"accepts", counts[0]}, {"handled", counts[1]},
		{"requests", counts[2]}, {"reading", rww[1]}, {"writing", rww[3]}, {"waiting", rww[5]},
	} {
		v, err := strconv.ParseUint(f.text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		fields[f.key] = v
	}
	return fields, nil
}

// tags are Telegraf's server and port: the URL's host and port, or the scheme's default
// port. A unix socket's URL has neither, and gets neither tag (Telegraf's are empty, which
// line protocol leaves out).
func tags(addr *url.URL) map[string]string {
	host, port, err := net.SplitHostPort(addr.Host)
	if err != nil {
		host = addr.Host
		switch addr.Scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		default:
			port = ""
		}
	}
	t := make(map[string]string, 2)
	if host != "" {
		t["server"] = host
	}
	if port != "" {
		t["port"] = port
	}
	return t
}
