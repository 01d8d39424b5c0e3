package influxquery

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ClientOptions configure a query Client.
type ClientOptions struct {
	URL       string // the server's base URL, such as http://127.0.0.1:8086
	Username  string // sent as basic auth, with Password, so that neither appears in a URL
	Password  string
	Timeout   time.Duration // bounds each query, reading the answer included; 0: no bound
	UserAgent string        // "morse" if empty
	// Headers are set on every request; "Host" sets the request's Host, as a proxy in front
	// of the server may need.
	Headers map[string]string
	// TLSConfig is used for https URLs; nil means Go's defaults, which verify the server.
	TLSConfig *tls.Config
	// HTTPClient replaces the client built from TLSConfig, for example to share a transport
	// or to set a proxy. Timeout still applies, per query.
	HTTPClient *http.Client
}

// Client queries InfluxDB 1.x. It asks for MessagePack, which keeps integers, floats and
// times apart and decodes faster than JSON, and reads JSON when that is what the server
// answers. It is safe for concurrent use.
type Client struct {
	base *url.URL
	opts ClientOptions
	http *http.Client
}

// NewClient returns a client for the server at opts.URL.
func NewClient(opts ClientOptions) (*Client, error) {
	u, err := parseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("influxdb client: %w", err)
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "morse"
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = opts.TLSConfig
		hc = &http.Client{Transport: tr}
	}
	return &Client{base: u, opts: opts, http: hc}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Format is the encoding a query asks the server for.
type Format int

// The formats.
const (
	FormatMsgpack Format = iota // application/x-msgpack, the default
	FormatJSON                  // application/json
)

// QueryOption changes one query.
type QueryOption func(*queryConfig)

type queryConfig struct {
	db, rp, epoch string
	chunked       bool
	chunkSize     int
	columnar      bool
	format        Format
}

// WithDatabase sets the database (db=).
func WithDatabase(db string) QueryOption { return func(q *queryConfig) { q.db = db } }

// WithRetentionPolicy sets the default retention policy (rp=).
func WithRetentionPolicy(rp string) QueryOption { return func(q *queryConfig) { q.rp = rp } }

// WithEpoch asks for times as integers in a unit: "ns", "u", "ms", "s", "m" or "h". Row
// results then hold int64 times in that unit; columnar results convert them to nanoseconds.
func WithEpoch(unit string) QueryOption { return func(q *queryConfig) { q.epoch = unit } }

// WithChunked asks the server to stream the answer in chunks of size points (0: the
// server's default). The chunks are merged into one Response as they are decoded.
func WithChunked(size int) QueryOption {
	return func(q *queryConfig) { q.chunked, q.chunkSize = true, size }
}

// WithColumnar returns each series column by column (Result.Columnar) instead of row by row.
func WithColumnar() QueryOption { return func(q *queryConfig) { q.columnar = true } }

// WithFormat chooses the encoding to ask for. The answer is decoded by its Content-Type, so
// a server that ignores the request is still understood.
func WithFormat(f Format) QueryOption { return func(q *queryConfig) { q.format = f } }

var epochUnits = map[string]time.Duration{
	"": 0, "ns": time.Nanosecond, "n": time.Nanosecond, "u": time.Microsecond, "µ": time.Microsecond,
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
}

// Query runs q (one or more statements) and returns the decoded answer. The error is a
// transport or decoding error, or a *QueryError when the server refused the query or a
// statement failed; in the latter case the Response holds the other statements' results.
func (c *Client) Query(ctx context.Context, q string, opts ...QueryOption) (*Response, error) {
	var cfg queryConfig
	for _, o := range opts {
		o(&cfg)
	}
	epoch, ok := epochUnits[cfg.epoch]
	if !ok {
		return nil, fmt.Errorf("influxdb query: unknown epoch %q", cfg.epoch)
	}
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	req, err := c.request(ctx, q, cfg)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, refusal(resp)
	}
	out := &Response{}
	body := bufio.NewReaderSize(resp.Body, 64<<10)
	if err := decodeAnswer(body, resp.Header.Get("Content-Type"), out, cfg.columnar, epoch); err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, body)
	if err := out.Error(); err != nil {
		return out, &QueryError{StatusCode: resp.StatusCode, Message: err.Error()}
	}
	return out, nil
}

// maxRefusal bounds how much of an answer other than 200 is read: it is an error message.
const maxRefusal = 64 << 10

// refusal reads the answer to a query that the server refused: InfluxDB's error document
// when it is one, else the body as text (a proxy's page, say), else the status line.
func refusal(resp *http.Response) *QueryError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusal))
	qe := &QueryError{StatusCode: resp.StatusCode, Message: resp.Status}
	var out Response
	r := bufio.NewReader(bytes.NewReader(body))
	if decodeAnswer(r, resp.Header.Get("Content-Type"), &out, false, 0) == nil {
		if err := out.Error(); err != nil {
			qe.Message = err.Error()
		}
		return qe
	}
	if text := strings.TrimSpace(string(body)); text != "" {
		qe.Message = text
	}
	return qe
}

// request builds the POST /query request. POST works for every statement, reading or not,
// and keeps the query out of access logs' URLs.
func (c *Client) request(ctx context.Context, q string, cfg queryConfig) (*http.Request, error) {
	form := url.Values{"q": {q}}
	set := func(k, v string) {
		if v != "" {
			form.Set(k, v)
		}
	}
	set("db", cfg.db)
	set("rp", cfg.rp)
	set("epoch", cfg.epoch)
	if cfg.chunked {
		form.Set("chunked", "true")
		if cfg.chunkSize > 0 {
			form.Set("chunk_size", strconv.Itoa(cfg.chunkSize))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.JoinPath("query").String(),
		strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if cfg.format == FormatJSON {
		req.Header.Set("Accept", "application/json")
	} else {
		req.Header.Set("Accept", "application/x-msgpack")
	}
	for k, v := range c.opts.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v // net/http ignores a Host header
			continue
		}
		req.Header.Set(k, v)
	}
	// After the configured headers: the body is a form, whatever they say.
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.opts.Username != "" || c.opts.Password != "" {
		req.SetBasicAuth(c.opts.Username, c.opts.Password)
	}
	return req, nil
}

// decodeAnswer decodes a body by its content type, or by its first byte when the type says
// nothing useful: a MessagePack answer is a map (0x80-0x8f, 0xde, 0xdf), a JSON one '{'.
func decodeAnswer(r *bufio.Reader, contentType string, resp *Response, columnar bool, epoch time.Duration) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/x-msgpack":
		return decodeMsgpack(r, resp, columnar, epoch)
	case "application/json":
		return decodeJSON(r, resp, columnar, epoch)
	}
	b, err := r.Peek(1)
	if err != nil {
		return fmt.Errorf("influxdb: empty answer (Content-Type %q)", contentType)
	}
	if b[0] == '{' {
		return decodeJSON(r, resp, columnar, epoch)
	}
	if b[0]&0xf0 == 0x80 || b[0] == 0xde || b[0] == 0xdf {
		return decodeMsgpack(r, resp, columnar, epoch)
	}
	text, _ := io.ReadAll(io.LimitReader(r, 512))
	return fmt.Errorf("influxdb: unreadable answer (Content-Type %q): %q", contentType, text)
}

// parseURL checks a server's base URL. Its errors never show credentials.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	shown := *u
	shown.User = nil
	switch {
	case u.User != nil:
		return nil, fmt.Errorf("%q: put credentials in Username and Password, not in the URL, so that they are never logged", &shown)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: the scheme must be http or https", &shown)
	case u.Host == "":
		return nil, fmt.Errorf("%q: no host", &shown)
	}
	return u, nil
}

// QuoteIdent quotes an InfluxQL identifier, such as a database, measurement or field name,
// so that any name can be put in a query.
func QuoteIdent(s string) string {
	return `"` + identEscaper.Replace(s) + `"`
}

var identEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
