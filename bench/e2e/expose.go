package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxExposeLifetime caps how long `morse-bench expose` runs, so that one a harness forgot
// still stops.
const maxExposeLifetime = 2 * time.Hour

// ExposeMain runs `morse-bench expose`: the scrape targets of the vmagent benchmark. It
// serves one Prometheus text exposition (--file) at /metrics on --targets loopback ports,
// gzipped when the scraper accepts gzip (both agents do, as Prometheus does), and prints
// the targets' host:port, space-separated, as the first line of stdout. Serving fixed bytes
// costs the target side next to nothing, so that the core it shares with VictoriaMetrics
// is not what limits the scrapers, and every agent scrapes the same series.
func ExposeMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("morse-bench expose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "the text exposition to serve")
	targets := fs.Int("targets", 1, "how many targets (ports) serve it")
	lifetime := fs.Duration("lifetime", time.Hour, fmt.Sprintf("stop after this long (at most %s)", maxExposeLifetime))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	body, err := os.ReadFile(*file)
	if err != nil || *targets < 1 || *targets > 1000 || *lifetime <= 0 || *lifetime > maxExposeLifetime {
		fmt.Fprintf(stderr, "morse-bench expose: give a readable --file (%v), 1 to 1000 --targets and a --lifetime up to %s\n", err, maxExposeLifetime)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	h, err := newExposition(body)
	if err != nil {
		fmt.Fprintf(stderr, "morse-bench expose: %v\n", err)
		return 1
	}
	if err := serveTargets(ctx, *targets, h, stdout); err != nil {
		fmt.Fprintf(stderr, "morse-bench expose: %v\n", err)
		return 1
	}
	return 0
}

// exposition serves one body, plain or gzipped.
type exposition struct{ plain, gzipped []byte }

func newExposition(body []byte) (*exposition, error) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &exposition{plain: body, gzipped: gz.Bytes()}, nil
}

func (x *exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	body := x.plain
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		body = x.gzipped
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// serveTargets listens on n free loopback ports, prints them, and serves h until ctx ends.
func serveTargets(ctx context.Context, n int, h http.Handler, stdout io.Writer) error {
	var addrs []string
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = srv.Close()
			return err
		}
		addrs = append(addrs, ln.Addr().String())
		go func() { errc <- srv.Serve(ln) }()
	}
	fmt.Fprintln(stdout, strings.Join(addrs, " "))
	select {
	case <-ctx.Done():
	case err := <-errc:
		_ = srv.Close()
		return err
	}
	return srv.Close()
}

// cpuLabel finds the label cpu="N" of a sample line.
var cpuLabel = regexp.MustCompile(`([{,])cpu="(\d+)"`)

// scaleExposition returns a node_exporter exposition with at least want samples, made
// from a capture of a smaller machine by giving it more CPUs: every sample of CPU 0 gets
// copies for CPUs the capture lacks, right after it, so that each family's samples stay
// together as the text format requires. node_exporter's size grows with a host's CPUs,
// disks and interfaces; a container here has few of each. It returns the capture as it is
// when it already has want samples or has no per-CPU samples.
func scaleExposition(capture []byte, want int) (out []byte, samples int) {
	lines := strings.SplitAfter(string(capture), "\n")
	total, perCPU, maxCPU := 0, 0, 0
	for _, l := range lines {
		if l == "" || l[0] == '#' || strings.TrimSpace(l) == "" {
			continue
		}
		total++
		if m := cpuLabel.FindStringSubmatch(l); m != nil {
			c, _ := strconv.Atoi(m[2])
			maxCPU = max(maxCPU, c)
			if c == 0 {
				perCPU++
			}
		}
	}
	if total >= want || perCPU == 0 {
		return capture, total
	}
	extra := (want - total + perCPU - 1) / perCPU
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		m := cpuLabel.FindStringSubmatchIndex(l)
		if m == nil || l[0] == '#' || l[m[4]:m[5]] != "0" {
			continue
		}
		for c := maxCPU + 1; c <= maxCPU+extra; c++ {
			b.WriteString(l[:m[4]] + strconv.Itoa(c) + l[m[5]:])
		}
	}
	return []byte(b.String()), total + extra*perCPU
}
