package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// BenchmarkAgentToKafka is the edge tier end to end: the built agent, pinned to core 0
// where taskset exists (the load and the broker then run on core 1), takes HTTP bodies (of
// 100 to 5000 lines, over 1 to 16 connections) on its influxdb_listener and writes them with
// outputs.kafka (influx format, routing by host, idempotent with all acks) to a real broker.
// The clock stops once the topic holds every line. It reports the agent's CPU per line,
// read from /proc: the listener, the buffer, the flush loop and the Kafka client, but not
// the load or the broker.
func BenchmarkAgentToKafka(b *testing.B) {
	pinOthers(b)
	srv := testserver.StartKafka(b, testserver.KafkaOptions{FullJIT: true})
	pool, err := loadgen.Generate(loadgen.GenOptions{Seed: 1, Hosts: 1000, Lines: 100_000})
	if err != nil {
		b.Fatal(err)
	}
	for _, shape := range []struct{ conns, bodyLines int }{{1, 1000}, {4, 100}, {4, 1000}, {4, 5000}, {16, 1000}} {
		b.Run(fmt.Sprintf("c%d-b%d", shape.conns, shape.bodyLines), func(b *testing.B) {
			benchAgentToKafka(b, srv, pool, shape.conns, shape.bodyLines)
		})
	}
}

// pinOthers runs this process, and so the load it sends and the broker it starts, on core 1
// for the rest of the benchmark, as bench/e2e runs its load and sinks, while the
// agent runs alone on core 0: the agent's CPU per line is then its own work, not what a
// busy broker sharing its core costs it in caches and switches. Without taskset's agent
// pinning, or on one core, nothing is pinned.
func pinOthers(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		return
	}
	var was, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		b.Fatal(err)
	}
	one.Set(1)
	setAffinity(b, &one)
	b.Cleanup(func() { setAffinity(b, &was) })
}

// setAffinity sets the CPU affinity of every thread of this process; threads started later
// inherit it from the thread that starts them.
func setAffinity(b *testing.B, set *unix.CPUSet) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			b.Fatal(err)
		}
	}
}

// edgeTopics numbers the benchmark's topics, so that every run counts a fresh one.
var edgeTopics atomic.Int64

// minEdgeLines is the fewest lines a run of BenchmarkAgentToKafka sends.
const minEdgeLines = 200_000

func benchAgentToKafka(b *testing.B, srv *testserver.Kafka, pool *loadgen.Pool, conns, bodyLines int) {
	topic := fmt.Sprintf("edge-%d", edgeTopics.Add(1))
	srv.CreateTopic(b, topic, 3, nil)
	addr := testutil.FreeAddr(b)
	conf := writeFile(b, b.TempDir(), "edge.conf", fmt.Sprintf(`
[agent]
  omit_hostname = true
  flush_interval = "1s"
[[inputs.influxdb_listener]]
  service_address = %q
[[outputs.kafka]]
  brokers = [%q]
  topic = %q
  routing_tag = "host"
  required_acks = -1
  idempotent_writes = true
`, addr, srv.Addr(), topic))
	pid := startPinnedAgent(b, conf, addr)
	bodies := make([][]byte, max(1, 100_000/bodyLines))
	base := time.Now().Add(-time.Hour).UnixNano()
	for i := range bodies {
		bodies[i] = pool.AppendLines(nil, int64(i*bodyLines), bodyLines, base)
	}
	url := "http://" + addr + "/write?db=edge"
	// At least minEdgeLines a run: /proc counts CPU in 10 ms ticks, and the first runs that
	// size b.N would otherwise measure a few thousand lines. ns/op then counts them too.
	n := max(b.N, (minEdgeLines+bodyLines-1)/bodyLines)
	cpu0 := procCPU(b, pid)
	b.ResetTimer()
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				postBody(b, url, bodies[i%len(bodies)])
			}
		})
	}
	wg.Wait()
	lines := int64(n) * int64(bodyLines)
	deadline := time.Now().Add(2 * time.Minute)
	for total, _ := srv.EndOffsets(b, topic); total < lines; total, _ = srv.EndOffsets(b, topic) {
		if time.Now().After(deadline) {
			b.Fatalf("the topic holds %d of %d lines after 2 minutes", total, lines)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	cpu := procCPU(b, pid) - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(lines), "agent-cpu-ns/line")
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// startPinnedAgent runs the built agent on conf, on core 0 when taskset exists, and waits
// until its listener at addr answers /ping. It returns the agent's process id.
func startPinnedAgent(b *testing.B, conf, addr string) int {
	argv := []string{morseBin, "--config", conf}
	if a := os.Getenv("MORSE_BENCH_PPROF"); a != "" {
		argv = append(argv, "--pprof-addr", a) // a CPU profile of the agent under this load
	}
	if _, err := exec.LookPath("taskset"); err == nil {
		argv = append([]string{"taskset", "-c", "0"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	log, err := os.Create(filepath.Join(b.TempDir(), "agent.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		_ = log.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/ping"); err == nil {
			resp.Body.Close()
			return cmd.Process.Pid // taskset execs the agent: the pid is the agent's
		}
		if time.Now().After(deadline) {
			b.Fatal("the agent's listener did not answer in 30 s")
		}
	}
}

// postBody sends one body and fails the benchmark on any answer but 204.
func postBody(b *testing.B, url string, body []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		b.Errorf("POST /write: %s", resp.Status)
	}
}

// procCPU is the user and system CPU time of process pid so far, from /proc/pid/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	cpu, err := testutil.ProcCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}
