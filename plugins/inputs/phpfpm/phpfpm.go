// Package phpfpm is the inputs.phpfpm plugin: every interval it reads the status page of
// PHP-FPM pools (pm.status_path) and reports Telegraf 1.39.3's measurement phpfpm (tags pool
// and url, integer fields) and, with format = "json" and a full page, phpfpm_process per
// worker. A page is read over HTTP(S) from a web server in front of the pool, or straight
// from the pool by FastCGI: over TCP (fcgi:// or cgi://) or a unix socket (a path, with an
// optional ":status-path" and glob patterns), with the package's own small FastCGI client.
//
// A URL that cannot be read, answers with an error or with a page that does not parse is
// one error of the gather, with the URL; the other URLs are still gathered.
package phpfpm

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/tlsclient"
	"github.com/morse-agent/morse/plugins/inputs/file/globpath"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Read metrics of phpfpm, via HTTP status page or socket"

//go:embed sample.conf
var sampleConfig string

// DefaultURL is the URL read when urls is empty, as in Telegraf.
const DefaultURL = "http://127.0.0.1/status"

// Phpfpm is the inputs.phpfpm plugin and its configuration. Build it with New.
type Phpfpm struct {
	// URLs are the status pages: http:// or https:// URLs, fcgi:// or cgi://host:port/path
	// URLs, or unix socket paths (globs allowed) with an optional ":status-path"; a query
	// (?json&full) is passed on in each form. DefaultURL when empty.
	URLs []string `toml:"urls"`
	// Format is how the page is parsed: "status" (the default, text) or "json", which also
	// gives phpfpm_process when the page is full.
	Format string `toml:"format"`
	// Timeout bounds each request, connection included; 5s by default, zero no bound.
	Timeout morse.Duration `toml:"timeout"`
	tlsclient.Config

	client *http.Client
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input       = (*Phpfpm)(nil)
	_ morse.Validator   = (*Phpfpm)(nil)
	_ morse.Initializer = (*Phpfpm)(nil)
)

// New returns the plugin with its defaults: Telegraf's, with the 5s timeout its sample
// documents (Telegraf's code has none).
func New() *Phpfpm { return &Phpfpm{Timeout: morse.Duration(5 * time.Second)} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "phpfpm",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options.
func (p *Phpfpm) Validate() error {
	errs := []error{p.Config.Validate()}
	switch p.Format {
	case "", "status", "json":
	default:
		errs = append(errs, morse.Errorf("format", "invalid format %q: want \"status\" or \"json\"", p.Format))
	}
	if p.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "must not be negative"))
	}
	for _, raw := range p.URLs {
		if err := checkURL(raw); err != nil {
			errs = append(errs, morse.Errorf("urls", "%v", err))
		}
	}
	return errors.Join(errs...)
}

// checkURL refuses what can never be read.
func checkURL(raw string) error {
	switch {
	case isHTTP(raw):
		if _, err := url.Parse(raw); err != nil {
			return err
		}
	case isFCGI(raw):
		if _, err := fcgiTarget(raw); err != nil {
			return err
		}
	default:
		socket, _, _ := strings.Cut(raw, ":")
		if _, err := globpath.Compile(socket); err != nil {
			return fmt.Errorf("could not compile glob %q: %w", socket, err)
		}
	}
	return nil
}

// Init builds the HTTP client: the TLS options, no proxy (as Telegraf's), Timeout.
func (p *Phpfpm) Init() error {
	if len(p.URLs) == 0 {
		p.URLs = []string{DefaultURL}
	}
	if p.Format == "" {
		p.Format = "status"
	}
	tlsCfg, err := p.TLSConfig()
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.TLSClientConfig = tlsCfg
	p.client = &http.Client{Transport: tr, Timeout: time.Duration(p.Timeout)}
	return nil
}

// Gather reads every URL (every socket its glob finds) at once and waits for all of them.
func (p *Phpfpm) Gather(ctx context.Context, acc morse.Accumulator) error {
	if p.client == nil {
		if err := p.Init(); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for _, addr := range p.expand(acc) {
		wg.Go(func() {
			if err := p.gatherURL(ctx, acc, addr); err != nil {
				acc.AddError(err)
			}
		})
	}
	wg.Wait()
	return nil
}

// expand replaces each socket glob by the sockets it finds now, with its status path; a
// glob that finds none is an error.
func (p *Phpfpm) expand(acc morse.Accumulator) []string {
	addrs := make([]string, 0, len(p.URLs))
	for _, raw := range p.URLs {
		if isHTTP(raw) || isFCGI(raw) {
			addrs = append(addrs, raw)
			continue
		}
		pattern, status, hasStatus := strings.Cut(raw, ":")
		g, err := globpath.Compile(pattern)
		if err != nil {
			acc.AddError(fmt.Errorf("could not compile glob %q: %w", pattern, err))
			continue
		}
		found := g.MatchAny()
		if len(found) == 0 {
			acc.AddError(fmt.Errorf("socket doesn't exist %q", pattern))
			continue
		}
		for _, s := range found {
			if hasStatus {
				s += ":" + status
			}
			addrs = append(addrs, s)
		}
	}
	return addrs
}

// gatherURL reads one page and adds its metrics, all with the same time.
func (p *Phpfpm) gatherURL(ctx context.Context, acc morse.Accumulator, addr string) error {
	if p.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.Timeout))
		defer cancel()
	}
	now := time.Now()
	var body []byte
	var err error
	if isHTTP(addr) {
		body, err = p.getHTTP(ctx, addr)
	} else {
		body, err = getFCGI(ctx, addr)
	}
	if err != nil {
		return err
	}
	if p.Format == "json" {
		err = parseJSON(body, addr, now, acc)
	} else {
		err = parseStatus(body, addr, now, acc)
	}
	if err != nil {
		return fmt.Errorf("unable to parse the phpfpm status of %q: %w", addr, err)
	}
	return nil
}

func (p *Phpfpm) getHTTP(ctx context.Context, addr string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("unable to create new request %q: %w", addr, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("unable to connect to phpfpm status page %q: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("unable to get valid stat result from %q: HTTP status %s", addr, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("reading phpfpm status page %q: %w", addr, err)
	}
	if len(body) > maxResponse {
		return nil, fmt.Errorf("phpfpm status page %q is over %d bytes", addr, maxResponse)
	}
	return body, nil
}

// target is where a FastCGI request goes and what it asks for.
type target struct {
	network, address string
	script, query    string // "/status", "json&full"
}

// fcgiTarget reads fcgi://host:port/path?query (or cgi://); the path is "status" when empty.
func fcgiTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, fmt.Errorf("unable parse server address %q: %w", raw, err)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return target{}, fmt.Errorf("url does not follow required 'address:port' format: %s", u.Host)
	}
	return target{network: "tcp", address: u.Host, script: scriptName(u.Path), query: u.RawQuery}, nil
}

// socketTarget reads /path/to.sock or /path/to.sock:status-path?query.
func socketTarget(addr string) target {
	socket, status, _ := strings.Cut(addr, ":")
	status, query, _ := strings.Cut(status, "?")
	return target{network: "unix", address: socket, script: scriptName(status), query: query}
}

// scriptName is the status path with one leading slash: "/status" when empty.
func scriptName(path string) string {
	path = strings.Trim(path, "/")
	if path == "" {
		path = "status"
	}
	return "/" + path
}

// getFCGI asks the pool for its status page as a web server would, and returns the body.
func getFCGI(ctx context.Context, addr string) ([]byte, error) {
	t := socketTarget(addr)
	if isFCGI(addr) {
		var err error
		if t, err = fcgiTarget(addr); err != nil {
			return nil, err
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, t.network, t.address)
	if err != nil {
		return nil, fmt.Errorf("unable to connect to phpfpm %q: %w", addr, err)
	}
	resp, err := fcgiDo(ctx, conn, []param{
		{"GATEWAY_INTERFACE", "CGI/1.1"},
		{"REQUEST_METHOD", "GET"},
		{"SCRIPT_NAME", t.script},
		{"SCRIPT_FILENAME", t.script},
		{"REQUEST_URI", t.script},
		{"QUERY_STRING", t.query},
		{"CONTENT_LENGTH", "0"},
		{"SERVER_PROTOCOL", "HTTP/1.0"},
		{"SERVER_SOFTWARE", "morse"},
		{"REMOTE_ADDR", "127.0.0.1"},
	})
	if err != nil {
		return nil, fmt.Errorf("phpfpm %q: %w", addr, err)
	}
	status, body, err := splitCGI(resp.stdout)
	if len(resp.stderr) > 0 {
		return nil, fmt.Errorf("phpfpm %q answered %s: %s", addr, status, strings.TrimSpace(string(resp.stderr)))
	}
	if err != nil {
		return nil, fmt.Errorf("phpfpm %q: %w", addr, err)
	}
	if !strings.HasPrefix(status, "200") {
		return nil, fmt.Errorf("phpfpm %q answered %s", addr, status)
	}
	return body, nil
}

func isHTTP(addr string) bool {
	return strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://")
}

func isFCGI(addr string) bool {
	return strings.HasPrefix(addr, "fcgi://") || strings.HasPrefix(addr, "cgi://")
}
