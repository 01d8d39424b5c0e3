package loadgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// MaxDatagram is the largest UDP payload the sender writes. It stays under the 64 KiB that
// listeners commonly read per datagram and under IPv4's limit of 65507 bytes.
const MaxDatagram = 64000

// conn delivers batches of lines over one connection. Each sending goroutine owns one, so
// implementations need no locking.
type conn interface {
	// send delivers body, which holds lines complete lines, and records the outcome in st.
	send(ctx context.Context, body []byte, lines int, st *Stats)
	close()
}

// newHTTPTransport makes the transport shared by the HTTP connections. It ignores the
// HTTP_PROXY variables, which could send the load off the machine, and keeps one idle
// connection per sender so that every request reuses a warm connection.
func newHTTPTransport(conns int, timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// httpConn posts each batch as one request body.
type httpConn struct {
	clock   Clock // waits out Retry-After
	client  *http.Client
	url     string
	timeout time.Duration
	gzip    bool
	zbuf    bytes.Buffer
	zw      *gzip.Writer
}

func newHTTPConn(tr *http.Transport, url string, timeout time.Duration, gz bool, clock Clock) *httpConn {
	c := &httpConn{url: url, timeout: timeout, gzip: gz, clock: clock}
	c.client = &http.Client{
		Transport: tr,
		// A redirect could point anywhere; the answer to the first request is final.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if gz {
		// The fastest level: the tool exists to generate load, and the default level would
		// make compression, not the receiver, the limit.
		c.zw, _ = gzip.NewWriterLevel(&c.zbuf, gzip.BestSpeed) // the level is valid
	}
	return c
}

func (c *httpConn) send(ctx context.Context, body []byte, lines int, st *Stats) {
	payload := body
	if c.gzip {
		c.zbuf.Reset()
		c.zw.Reset(&c.zbuf)
		_, _ = c.zw.Write(body) // writes to a bytes.Buffer cannot fail
		_ = c.zw.Close()
		payload = c.zbuf.Bytes()
	}
	for attempt := 0; ; attempt++ {
		code, retryAfter, msg, err := c.post(ctx, payload, st)
		if err != nil {
			st.fail(lines, err)
			return
		}
		if code/100 == 2 {
			st.ok(lines, len(body), len(payload))
			return
		}
		if !retryable(code) || attempt == maxRetries {
			st.fail(lines, fmt.Errorf("HTTP %d: %s", code, msg))
			return
		}
		// A server that is full asks the client to come back later, as InfluxDB's clients
		// and Telegraf's outputs do: the same body again, after Retry-After.
		st.Retries++
		if err := c.clock.Sleep(ctx, retryDelay(retryAfter, attempt)); err != nil {
			st.fail(lines, err)
			return
		}
	}
}

// maxRetries is how many times one body is sent again after a 429 or 503 answer.
const maxRetries = 20

// retryable reports whether an answer asks the client to send the same body later.
func retryable(code int) bool {
	return code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests
}

// retryDelay is how long to wait before sending a body again: what the server's Retry-After
// asked for, capped, or else a backoff that doubles from 100 ms to 5 s.
func retryDelay(retryAfter string, attempt int) time.Duration {
	if secs, err := strconv.Atoi(retryAfter); err == nil && secs >= 0 {
		return min(time.Duration(secs)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(retryAfter); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return min(100*time.Millisecond<<min(attempt, 6), 5*time.Second)
}

// maxRetryAfter caps a server's Retry-After, so that one answer cannot stall a bounded run.
const maxRetryAfter = 30 * time.Second

// post sends one request and returns its status, Retry-After header and the start of the
// answer's body. The error is for a request that got no answer.
func (c *httpConn) post(ctx context.Context, payload []byte, st *Stats) (code int, retryAfter string, msg []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(payload))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	st.Requests++
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	// Read the answer to its end so that the connection can be reused.
	msg, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	st.status(resp.StatusCode)
	return resp.StatusCode, resp.Header.Get("Retry-After"), bytes.TrimSpace(msg), nil
}

// close drops the transport's idle keep-alive connections, which also ends the goroutines
// that the transport runs for each of them.
func (c *httpConn) close() { c.client.CloseIdleConnections() }

// streamConn writes batches to one TCP connection, dialling again after a failure.
type streamConn struct {
	addr    string
	timeout time.Duration
	sndbuf  int // SO_SNDBUF; 0 leaves the kernel's
	c       net.Conn
}

func (c *streamConn) send(ctx context.Context, body []byte, lines int, st *Stats) {
	if c.c == nil {
		d := net.Dialer{Timeout: c.timeout}
		nc, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			st.fail(lines, err)
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok && c.sndbuf > 0 {
			_ = tc.SetWriteBuffer(c.sndbuf)
		}
		c.c = nc
	}
	st.Requests++
	_ = c.c.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := c.c.Write(body); err != nil {
		// Part of the batch may have gone out; the receiver sees a cut line, which is what
		// a real client's failure looks like too. Count the whole batch as failed.
		st.fail(lines, err)
		c.close()
		return
	}
	st.ok(lines, len(body), len(body))
}

func (c *streamConn) close() {
	if c.c != nil {
		_ = c.c.Close()
		c.c = nil
	}
}

// datagramConn sends batches as UDP datagrams of whole lines, each at most max bytes.
type datagramConn struct {
	c   net.Conn
	max int
}

func newDatagramConn(addr string, max int) (*datagramConn, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil, err
	}
	return &datagramConn{c: c, max: max}, nil
}

func (c *datagramConn) send(_ context.Context, body []byte, _ int, st *Stats) {
	start, end, count := 0, 0, 0
	for end < len(body) {
		i := bytes.IndexByte(body[end:], '\n')
		lineEnd := len(body)
		if i >= 0 {
			lineEnd = end + i + 1
		}
		if lineEnd-start > c.max && count > 0 {
			c.write(body[start:end], count, st)
			start, count = end, 0
		}
		end = lineEnd
		count++
	}
	if count > 0 {
		c.write(body[start:end], count, st)
	}
}

func (c *datagramConn) write(dgram []byte, lines int, st *Stats) {
	st.Requests++
	if _, err := c.c.Write(dgram); err != nil {
		st.fail(lines, err)
		return
	}
	st.ok(lines, len(dgram), len(dgram))
}

func (c *datagramConn) close() { _ = c.c.Close() }

// Stats counts what was sent. Lines and Bytes count only what was delivered: written to a
// TCP or UDP socket, or answered with 2xx over HTTP.
type Stats struct {
	Lines       int64 `json:"lines"`
	Bytes       int64 `json:"bytes"`      // line protocol bytes of Lines
	WireBytes   int64 `json:"wire_bytes"` // bytes on the wire, after gzip
	Requests    int64 `json:"requests"`   // HTTP requests, TCP writes or datagrams
	FailedLines int64 `json:"failed_lines"`
	Errors      int64 `json:"errors"`
	// Retries counts HTTP requests sent again after a 429 or 503 answer.
	Retries      int64            `json:"retries"`
	HTTPStatus   map[string]int64 `json:"http_status,omitempty"`
	ErrorSamples []string         `json:"error_samples,omitempty"`
}

// maxErrorSamples is how many distinct error messages Stats keeps.
const maxErrorSamples = 5

func (s *Stats) ok(lines, bytes, wire int) {
	s.Lines += int64(lines)
	s.Bytes += int64(bytes)
	s.WireBytes += int64(wire)
}

func (s *Stats) fail(lines int, err error) {
	s.FailedLines += int64(lines)
	s.Errors++
	s.sample(err.Error())
}

func (s *Stats) sample(msg string) {
	if len(s.ErrorSamples) >= maxErrorSamples {
		return
	}
	for _, m := range s.ErrorSamples {
		if m == msg {
			return
		}
	}
	s.ErrorSamples = append(s.ErrorSamples, msg)
}

func (s *Stats) status(code int) {
	if s.HTTPStatus == nil {
		s.HTTPStatus = map[string]int64{}
	}
	s.HTTPStatus[strconv.Itoa(code)]++
}

func (s *Stats) merge(o *Stats) {
	s.Lines += o.Lines
	s.Bytes += o.Bytes
	s.WireBytes += o.WireBytes
	s.Requests += o.Requests
	s.FailedLines += o.FailedLines
	s.Errors += o.Errors
	s.Retries += o.Retries
	for k, v := range o.HTTPStatus {
		if s.HTTPStatus == nil {
			s.HTTPStatus = map[string]int64{}
		}
		s.HTTPStatus[k] += v
	}
	for _, m := range o.ErrorSamples {
		s.sample(m)
	}
}
