package loadgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers/influx"
)

// maxSinkBody bounds one request body after decompression, as a real server does.
const maxSinkBody = 256 << 20

// Sink is a minimal InfluxDB-compatible HTTP server that counts the lines written to it and
// discards them: the local end of the benchmark's output. It answers /write and
// /api/v2/write with 204, /query with an empty success (enough for CREATE DATABASE), /ping
// with 204, and /stats with its counters as JSON.
//
// By default it counts lines by their newlines, which costs little enough that the sink is
// never what limits a benchmark. With Parse set it parses every body instead, and counts
// the metrics and the refused lines, to check that what arrives is valid line protocol.
type Sink struct {
	// Parse makes the sink parse each body with morse's line-protocol parser.
	Parse bool

	lines, bytes, wireBytes, requests atomic.Int64
	badRequests, parseErrors          atomic.Int64
	queries                           atomic.Int64
	bufs                              sync.Pool
}

// SinkStats are the sink's counters.
type SinkStats struct {
	Lines       int64 `json:"lines"`        // lines received (metrics, with Parse)
	Bytes       int64 `json:"bytes"`        // body bytes after decompression
	WireBytes   int64 `json:"wire_bytes"`   // body bytes as received
	Requests    int64 `json:"requests"`     // write requests
	BadRequests int64 `json:"bad_requests"` // writes that could not be read
	ParseErrors int64 `json:"parse_errors"` // lines refused by the parser, with Parse
	Queries     int64 `json:"queries"`
}

// Stats returns the counters so far.
func (s *Sink) Stats() SinkStats {
	return SinkStats{
		Lines: s.lines.Load(), Bytes: s.bytes.Load(), WireBytes: s.wireBytes.Load(),
		Requests: s.requests.Load(), BadRequests: s.badRequests.Load(),
		ParseErrors: s.parseErrors.Load(), Queries: s.queries.Load(),
	}
}

// Handler serves the sink's endpoints.
func (s *Sink) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/write", s.write)
	mux.HandleFunc("/api/v2/write", s.write)
	mux.HandleFunc("/query", func(w http.ResponseWriter, r *http.Request) {
		s.queries.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"results":[{"statement_id":0}]}`+"\n")
	})
	mux.HandleFunc("/ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Influxdb-Version", "1.6.7-morse-sink")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
	})
	return mux
}

func (s *Sink) write(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	wire := &countingReader{r: r.Body}
	var body io.Reader = wire
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			s.refuse(w, err)
			return
		}
		defer zr.Close()
		body = zr
	}
	body = io.LimitReader(body, maxSinkBody+1)
	var c lineCounter
	var err error
	if s.Parse {
		err = s.parse(body, &c)
	} else {
		err = s.count(body, &c)
	}
	if err == nil && c.bytes > maxSinkBody {
		err = errors.New("body too large")
	}
	if err != nil {
		s.refuse(w, err)
		return
	}
	s.requests.Add(1)
	s.lines.Add(c.lines)
	s.bytes.Add(c.bytes)
	s.wireBytes.Add(wire.n)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Sink) refuse(w http.ResponseWriter, err error) {
	s.badRequests.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func (s *Sink) buffer() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 64<<10)
	return &b
}

// count counts lines as the body streams in, without holding it.
func (s *Sink) count(body io.Reader, c *lineCounter) error {
	bp := s.buffer()
	defer s.bufs.Put(bp)
	for {
		n, err := body.Read(*bp)
		c.write((*bp)[:n])
		if err == io.EOF {
			c.end()
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parse reads the whole body and parses it.
func (s *Sink) parse(body io.Reader, c *lineCounter) error {
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	var p influx.Parser
	res := p.Parse(data, func(morse.Metric) {})
	c.lines, c.bytes = int64(res.Metrics), int64(len(data))
	s.parseErrors.Add(int64(res.Errors))
	return nil
}

// lineCounter counts the lines of a stream that hold at least one byte, so that blank lines
// and a missing final newline do not change the count.
type lineCounter struct {
	lines, bytes int64
	inLine       bool
}

func (c *lineCounter) write(p []byte) {
	c.bytes += int64(len(p))
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.inLine = true
			return
		}
		if i > 0 || c.inLine {
			c.lines++
		}
		c.inLine = false
		p = p[i+1:]
	}
}

func (c *lineCounter) end() {
	if c.inLine {
		c.lines++
		c.inLine = false
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader and counts what it returned.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ServeSink listens on addr, which must be a loopback address (port 0 picks a free port),
// calls ready with the address it bound, and serves s until ctx ends. It then shuts the
// server down, waiting up to five seconds for requests in flight.
func ServeSink(ctx context.Context, addr string, s *Sink, ready func(net.Addr)) error {
	addr, err := LoopbackAddr(addr, true)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
	}
	if ready != nil {
		ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	return err
}
