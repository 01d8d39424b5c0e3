package churn

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/morse-agent/morse/bench/launch"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
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
	return fmt.Sprintf(`# Written by morse-bench churn.
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
	dir, err := os.MkdirTemp("", "morse-bench-churn-")
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

	ports, err := testutil.FreePorts("tcp", 1)
	if err != nil {
		return nil, err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	compress := float64(o.equivalent) / float64(o.duration)
	window := time.Duration(float64(time.Hour) / compress).Round(time.Millisecond)
	internalFile := filepath.Join(dir, "internal.out")
	cfgPath := filepath.Join(dir, "morse.conf")
	if err := os.WriteFile(cfgPath, []byte(config(listen, sinkLn.Addr().String(), internalFile, window)), 0o644); err != nil {
		return nil, err
	}
	agent, err := startAgent(ctx, o.morseBin, cfgPath, filepath.Join(dir, "morse.log"), listen)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped { // only if an error left it running
			_, _, _ = agent.Stop(5 * time.Second)
		}
	}()

	f := &feeder{w: o.work, url: "http://" + listen + "/write?db=soak", client: &http.Client{Timeout: 10 * time.Second},
		compress: compress, simStart: time.Now().Add(-o.equivalent).Truncate(time.Second)}
	fctx, stopFeed := context.WithTimeout(ctx, o.duration)
	defer stopFeed()
	fed := make(chan struct{})
	go func() { defer close(fed); f.run(fctx) }()

	samples, err := sampleUntil(fctx, agent.PID(), f, sink, compress)
	<-fed
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	delivered := waitDelivered(sink, f.sent.Load(), 60*time.Second)
	stopped = true
	if _, _, err := agent.Stop(30 * time.Second); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "morse-bench churn: fed %d metrics, delivered %d\n", f.sent.Load(), delivered)
	rep := newReport(o, window, samples, f, delivered, readGuardCounters(internalFile))
	rep.setHeap(readHeap(internalFile))
	if e := f.lastError.Load(); e != nil {
		rep.LastFeedError = (*e).Error()
	}
	return rep, nil
}

// startAgent starts the agent and waits until its listener answers /ping.
func startAgent(ctx context.Context, bin, cfgPath, logPath, listen string) (*launch.Process, error) {
	agent, err := launch.Start("agent", logPath, nil, []string{bin, "--config", cfgPath})
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: time.Second}
	ping := func() bool {
		resp, err := client.Get("http://" + listen + "/ping")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil
	}
	if err := agent.WaitFor(ctx, 30*time.Second, "answer on "+listen, ping); err != nil {
		_, _, _ = agent.Stop(5 * time.Second)
		return nil, err
	}
	return agent, nil
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
	kib, err := testutil.StatusKiB(pid, "VmRSS", "RssAnon", "RssFile")
	if err != nil {
		return sample{}, err
	}
	return sample{RSSKiB: kib[0], AnonKiB: kib[1], FileKiB: kib[2]}, nil
}
