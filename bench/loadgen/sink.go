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
// With Distinct set it also records each line's timestamp, which the load tool makes unique
// per line, and so counts the distinct lines and the duplicates. With LinesPerSec set it
// answers no faster than that many lines a second, as a sink that cannot keep up does.
type Sink struct {
	// Parse makes the sink parse each body with morse's line-protocol parser.
	Parse bool
	// Distinct makes the sink count distinct lines by their timestamps.
	Distinct bool
	// LinesPerSec paces the answers: a body of n lines is answered no sooner than n/LinesPerSec
	// seconds after the previous body's answer was due. 0 answers at once.
	LinesPerSec float64

	lines, bytes, wireBytes, requests atomic.Int64
	badRequests, parseErrors          atomic.Int64
	queries, untracked                atomic.Int64
	bufs                              sync.Pool
	seen                              seenSet

	paceMu   sync.Mutex
	nextFree time.Time // when the paced sink has answered every body it has taken
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
	// Distinct counts lines with a timestamp not seen before, Duplicates the others, and
	// Untracked the lines without an integer timestamp, with Distinct.
	Distinct   int64 `json:"distinct,omitempty"`
	Duplicates int64 `json:"duplicates,omitempty"`
	Untracked  int64 `json:"untracked,omitempty"`
}

// Stats returns the counters so far.
func (s *Sink) Stats() SinkStats {
	st := SinkStats{
		Lines: s.lines.Load(), Bytes: s.bytes.Load(), WireBytes: s.wireBytes.Load(),
		Requests: s.requests.Load(), BadRequests: s.badRequests.Load(),
		ParseErrors: s.parseErrors.Load(), Queries: s.queries.Load(), Untracked: s.untracked.Load(),
	}
	st.Distinct, st.Duplicates = s.seen.counts()
	return st
}

// Reset zeroes the counters and forgets the lines seen, so that one sink can serve many
// benchmark runs, each counted from zero.
func (s *Sink) Reset() {
	for _, c := range []*atomic.Int64{&s.lines, &s.bytes, &s.wireBytes, &s.requests, &s.badRequests,
		&s.parseErrors, &s.queries, &s.untracked} {
		c.Store(0)
	}
	s.seen.reset()
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
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
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
	if s.Distinct {
		c.stamps = &stampReader{}
	}
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
	// The lines count once answered, as a real server's are once stored.
	if !s.pace(r.Context(), c.lines) {
		return
	}
	if c.stamps != nil {
		s.seen.add(c.stamps.stamps)
		s.untracked.Add(c.stamps.untracked)
	}
	s.requests.Add(1)
	s.lines.Add(c.lines)
	s.bytes.Add(c.bytes)
	s.wireBytes.Add(wire.n)
	w.WriteHeader(http.StatusNoContent)
}

// pace waits until a paced sink may answer a body of n lines. It reports false when the
// client went away first: the body then counts as never taken.
func (s *Sink) pace(ctx context.Context, n int64) bool {
	if s.LinesPerSec <= 0 || n == 0 {
		return true
	}
	s.paceMu.Lock()
	start := time.Now()
	if s.nextFree.After(start) {
		start = s.nextFree
	}
	s.nextFree = start.Add(time.Duration(float64(n) / s.LinesPerSec * float64(time.Second)))
	due := s.nextFree
	s.paceMu.Unlock()
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
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
	if c.stamps != nil {
		c.stamps.write(data)
		c.stamps.end()
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
	stamps       *stampReader // the lines' timestamps, for a sink that counts distinct lines
}

func (c *lineCounter) write(p []byte) {
	if c.stamps != nil {
		c.stamps.write(p)
	}
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
	if c.stamps != nil {
		c.stamps.end()
	}
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
