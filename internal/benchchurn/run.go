package main

import (
	"bufio"
	"context"
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
	"syscall"
	"time"

	"github.com/morse-agent/morse/internal/loadgen"
)

// sample is one reading, once a second.
type sample struct {
	WallS  float64 `json:"wall_s"`
	SimH   float64 `json:"sim_h"`
	RSSKiB int64   `json:"rss_kib"`
	// The anonymous and the file-backed parts of RSS (RssAnon, RssFile): the agent's data,
	// and the pages of its binary that have been touched so far.
	AnonKiB   int64 `json:"rss_anon_kib"`
	FileKiB   int64 `json:"rss_file_kib"`
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
}

// config is the agent's config for the soak. The guard's window is an hour of simulated
// time; the agent's own counters go to a file, past the guard and the sink.
func config(listen, sink, internalFile string, window time.Duration) string {
	return fmt.Sprintf(`# Written by internal/benchchurn.
[agent]
  interval = "1s"
  flush_interval = "1s"
  flush_jitter = "0s"
  metric_batch_size = 1000
  metric_buffer_limit = 20000
  omit_hostname = true

[[inputs.influxdb_listener]]
  service_address = %q

[[inputs.internal]]
  interval = "2s"
  collect_memstats = true

[[processors.cardinality]]
  namedrop = ["internal*"]
  max_values = 10000
  window = %q

[[outputs.influxdb]]
  namedrop = ["internal*"]
  urls = [%q]
  database = "soak"
  skip_database_creation = true

[[outputs.file]]
  namepass = ["internal*"]
  files = [%q]
`, listen, window.String(), "http://"+sink, internalFile)
}

// run starts the sink and the agent, feeds the agent for the duration while sampling its
// RSS, waits for the last metrics to be delivered and stops it.
func (o *options) run(ctx context.Context, stderr io.Writer) (*report, error) {
	dir, err := os.MkdirTemp("", "benchchurn-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sink := &loadgen.Sink{}
	sinkLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: sink.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(sinkLn) }()
	defer srv.Close()

	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	compress := float64(o.equivalent) / float64(o.duration)
	window := time.Duration(float64(time.Hour) / compress).Round(time.Millisecond)
	internalFile := filepath.Join(dir, "internal.out")
	cfgPath := filepath.Join(dir, "morse.conf")
	if err := os.WriteFile(cfgPath, []byte(config(listen, sinkLn.Addr().String(), internalFile, window)), 0o644); err != nil {
		return nil, err
	}
	agent, err := startAgent(o.morseBin, cfgPath, filepath.Join(dir, "morse.log"), listen)
	if err != nil {
		return nil, err
	}
	defer agent.Process.Kill() //nolint:errcheck // only if an error left it running

	f := &feeder{w: o.work, url: "http://" + listen + "/write?db=soak", client: &http.Client{Timeout: 10 * time.Second},
		compress: compress, simStart: time.Now().Add(-o.equivalent).Truncate(time.Second)}
	fctx, stopFeed := context.WithTimeout(ctx, o.duration)
	defer stopFeed()
	fed := make(chan struct{})
	go func() { defer close(fed); f.run(fctx) }()

	samples, err := sampleUntil(fctx, agent.Process.Pid, f, sink, compress)
	<-fed
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	delivered := waitDelivered(sink, f.sent.Load(), 60*time.Second)
	if err := stopAgent(agent, 30*time.Second); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "benchchurn: fed %d metrics, delivered %d\n", f.sent.Load(), delivered)
	rep := newReport(o, window, samples, f, delivered, readGuardCounters(internalFile))
	rep.setHeap(readHeap(internalFile))
	if e := f.lastError.Load(); e != nil {
		rep.LastFeedError = (*e).Error()
	}
	return rep, nil
}

// freeAddr returns a free port of 127.0.0.1 for the agent's listener.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// startAgent starts the agent and waits until its listener answers /ping.
func startAgent(bin, cfgPath, logPath, listen string) (*exec.Cmd, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	go func() { _ = cmd.Wait(); _ = log.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + listen + "/ping")
		if err == nil {
			resp.Body.Close()
			return cmd, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	logText, _ := os.ReadFile(logPath)
	return nil, fmt.Errorf("agent did not answer on %s within 30s; its log:\n%s", listen, logText)
}

// stopAgent sends SIGTERM and waits for the process to go.
func stopAgent(cmd *exec.Cmd, timeout time.Duration) error {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("agent did not exit within 30s of SIGTERM")
}

// sampleUntil reads the agent's RSS and the counters once a second until ctx ends.
func sampleUntil(ctx context.Context, pid int, f *feeder, sink *loadgen.Sink, compress float64) ([]sample, error) {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var out []sample
	for {
		select {
		case <-ctx.Done():
			return out, nil
		case <-tick.C:
		}
		s, err := readRSS(pid)
		if err != nil {
			return out, fmt.Errorf("agent gone: %w", err)
		}
		wall := time.Since(start).Seconds()
		s.WallS, s.SimH, s.Sent, s.Delivered = wall, wall*compress/3600, f.sent.Load(), sink.Stats().Lines
		out = append(out, s)
	}
}

// waitDelivered waits until the sink has every metric sent, or the timeout passes.
func waitDelivered(sink *loadgen.Sink, sent int64, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && sink.Stats().Lines < sent {
		time.Sleep(100 * time.Millisecond)
	}
	return sink.Stats().Lines
}

// readRSS reads VmRSS, RssAnon and RssFile of pid.
func readRSS(pid int) (sample, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return sample{}, err
	}
	defer f.Close()
	var s sample
	fields := map[string]*int64{"VmRSS:": &s.RSSKiB, "RssAnon:": &s.AnonKiB, "RssFile:": &s.FileKiB}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, _ := strings.Cut(sc.Text(), "\t")
		if dst, ok := fields[key]; ok {
			if *dst, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err != nil {
				return s, fmt.Errorf("%s %w", key, err)
			}
		}
	}
	if s.RSSKiB == 0 {
		return s, errors.New("no VmRSS")
	}
	return s, sc.Err()
}
