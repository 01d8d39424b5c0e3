package prometheusclient

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/morse-agent/morse"
)

// ConnectsAtStart reports true: the endpoint listens from the start, before any metric is
// written to it, so that Prometheus finds an up target with no series rather than a refused
// connection (which it records as up 0), and a port taken by another process is reported
// at start.
func (c *Client) ConnectsAtStart() bool { return true }

// Connect listens on listen and serves until Close, unless it already does. It may be
// called again after Close. A cancelled context starts nothing.
func (c *Client) Connect(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.Addr() != nil {
		return nil
	}
	if c.st == nil {
		if err := c.Init(); err != nil {
			return err
		}
	}
	addr, _ := c.listenAddr()
	tlsCfg, err := c.TLSConfig()
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("prometheus_client: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	path := c.Path
	if path == "" {
		path = "/metrics"
	}
	mux.Handle(path, c.guard(http.HandlerFunc(c.serveMetrics)))
	mux.Handle("/", c.guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("morse Output Plugin: Prometheus Client "))
	})))
	rt, wt := time.Duration(c.ReadTimeout), time.Duration(c.WriteTimeout)
	if rt < time.Second {
		rt = 10 * time.Second
	}
	if wt < time.Second {
		wt = 10 * time.Second
	}
	srv := &http.Server{Handler: mux, TLSConfig: tlsCfg, ReadTimeout: rt, WriteTimeout: wt, ReadHeaderTimeout: rt}
	served := make(chan struct{})
	c.mu.Lock()
	c.srv, c.addr, c.served = srv, ln.Addr(), served
	c.mu.Unlock()
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	c.log.Info("listening", "url", scheme+"://"+ln.Addr().String()+path)
	go func() {
		defer close(served)
		var err error
		if tlsCfg != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("server stopped", "error", err)
		}
	}()
	return nil
}

// Addr is the address the output listens on, nil when it does not.
func (c *Client) Addr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// Close stops the server, waiting up to five seconds for scrapes in progress. The store is
// kept for a later Connect.
func (c *Client) Close() error {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	c.mu.Lock()
	srv, served := c.srv, c.served
	c.srv, c.addr = nil, nil
	c.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, srv.Close())
	}
	<-served
	return err
}

// guard sets http_headers, then checks basic auth (401) and ip_range (403), in Telegraf's
// order.
func (c *Client) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range c.HTTPHeaders {
			w.Header().Set(k, string(v))
		}
		if c.BasicUsername != "" || c.BasicPassword.IsSet() {
			user, pass, ok := r.BasicAuth()
			u := subtle.ConstantTimeCompare([]byte(user), []byte(c.BasicUsername)) == 1
			if !ok || !u || !c.BasicPassword.Matches(pass) {
				w.Header().Set("WWW-Authenticate", `Basic realm="prometheus"`)
				http.Error(w, "Unauthorized.", http.StatusUnauthorized)
				return
			}
		}
		if len(c.ranges) > 0 && !c.allowed(r.RemoteAddr) {
			http.Error(w, http.StatusText(http.StatusForbidden), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (c *Client) allowed(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	for _, n := range c.ranges {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

// bufPool holds the buffers scrapes render into, so that a scrape of a store that did not
// grow allocates nothing for its text.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

var gzPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// serveMetrics renders the store, gzipped when the scraper accepts it, as Prometheus does.
func (c *Client) serveMetrics(w http.ResponseWriter, r *http.Request) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := c.render((*bp)[:0])
	*bp = buf
	h := w.Header()
	h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		_, _ = w.Write(buf)
		return
	}
	h.Set("Content-Encoding", "gzip")
	gz := gzPool.Get().(*gzip.Writer)
	defer gzPool.Put(gz)
	gz.Reset(w)
	_, _ = gz.Write(buf)
	_ = gz.Close()
}

func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// render appends what a scrape serves: the store, expired series removed first, then the
// collectors' families that the store does not have.
func (c *Client) render(dst []byte) []byte {
	var deadline int64
	if exp := int64(c.ExpirationInterval); exp > 0 {
		deadline = c.now().UnixNano() - exp
	}
	dst = c.st.appendText(dst, deadline, c.ExportTimestamp, nil)
	extra := c.collect()
	if extra == nil {
		return dst
	}
	return extra.appendText(dst, 0, false, c.st.has)
}

// collect gathers the collectors' metrics into a store of their own: go_* and process_*
// unless collectors_exclude names them, and internal_* with internal_metrics.
func (c *Client) collect() *store {
	var batch []morse.Metric
	now := c.now()
	if !c.excluded("gocollector") {
		batch = append(batch, goMetrics(now))
	}
	if !c.excluded("process") {
		if m, ok := processMetrics(now); ok {
			batch = append(batch, m)
		}
	}
	c.extraMu.Lock()
	defer c.extraMu.Unlock()
	if c.InternalMetrics && c.selfReg != nil {
		batch = append(batch, internalMetrics(c.selfReg, now)...)
	}
	if len(batch) == 0 {
		return nil
	}
	if c.extra == nil {
		c.extra = newConverter(2, true, nil, nil, false)
	}
	st := newStore(1 << 20)
	st.mu.Lock()
	c.extra.write(st, batch, now.UnixNano())
	st.mu.Unlock()
	for _, f := range st.fams {
		if collectorGauges[f.name] {
			f.typ = gaugeKind
		}
	}
	return st
}

func (c *Client) excluded(name string) bool {
	for _, x := range c.CollectorsExclude {
		if x == name {
			return true
		}
	}
	return false
}
