package kafka_consumer

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// perMessage is how many metrics each message of the kill test holds.
const perMessage = 10

// sizeOf is the size of the files, in bytes.
func sizeOf(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// countFiles counts the numbered metrics written to the files.
func countFiles(t *testing.T, paths []string) *seqCounter {
	c := &seqCounter{}
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			c.line(sc.Bytes())
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	return c
}

// testKill runs a consumer process over 100,000 metrics and kills it with SIGKILL at random
// points, restarting it each time: every metric reaches the output, and the duplicates, what
// a killed process wrote but had not committed yet, are counted.
func testKill(t *testing.T, srv *testserver.Kafka) {
	const (
		topic, group    = "killed", "killed-group"
		metrics, perMsg = 100_000, 10
		kills           = 3
		bytesPerMetric  = 45 // about, as the file output writes a produceSeq line
		wait, check     = time.Minute, 10 * time.Millisecond
	)
	dir := t.TempDir()
	bin := filepath.Join(dir, "morse")
	require.NoError(t, testutil.BuildMorse(t.Context(), bin))
	srv.CreateTopic(t, topic, 4, nil)
	produceSeq(t, srv, topic, metrics, perMsg)
	firstOf := firstNumbers(t, srv, topic)

	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	var points []int64
	for range kills {
		points = append(points, int64(metrics*bytesPerMetric)*int64(5+rng.IntN(85))/100)
	}
	slices.Sort(points)
	t.Logf("seed %d: kill after about %v bytes of output", seed, points)

	var files []string
	for run := 0; run <= kills; run++ {
		path := filepath.Join(dir, fmt.Sprintf("out-%d.lp", run))
		files = append(files, path)
		conf := filepath.Join(dir, fmt.Sprintf("run-%d.conf", run))
		require.NoError(t, os.WriteFile(conf, []byte(consumerConf(srv.Addr(), topic, group, 1000, fmt.Sprintf("[[outputs.file]]\n  files = [%q]\n", path))), 0o600))
		began := time.Now()
		cmd := exec.Command(bin, "--config", conf)
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("run-%d.log", run)))
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = logf, logf
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if run < kills {
			require.Eventually(t, func() bool { return sizeOf(files) >= points[run] }, wait, check, "run %d reaches its kill point", run)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			<-exited
			requireWrittenUpToCommit(t, srv, group, topic, firstOf, files)
		} else {
			require.Eventually(t, func() bool { d, _ := countFiles(t, files).counts(); return d == metrics }, wait, 200*time.Millisecond,
				"every metric reaches the output after %d kills", kills)
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			require.NoError(t, <-exited)
		}
		require.NoError(t, logf.Close())
		t.Logf("run %d ended after %s", run, time.Since(began).Round(time.Millisecond))
	}
	c := countFiles(t, files)
	distinct, total := c.counts()
	require.Equal(t, metrics, distinct, "missing: %v", c.missing(metrics))
	t.Logf("kill -9 x%d: %d metrics, %d written, %d duplicates (%.2f%%)", kills, metrics, total, total-distinct,
		100*float64(total-distinct)/metrics)
	n, _ := committed(t, srv, group, topic)
	require.Equal(t, int64(metrics/perMsg), n, "every message is committed in the end")
}

// firstNumbers maps each message of topic, by partition and offset, to the number of its
// first metric: produceSeq numbers a message's metrics from it on.
func firstNumbers(t *testing.T, srv *testserver.Kafka, topic string) map[int32][]int {
	out := map[int32][]int{}
	for _, r := range srv.ReadTopic(t, topic) {
		m := seqField.FindSubmatch(r.Value)
		require.NotNil(t, m)
		n, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		require.Equal(t, int64(len(out[r.Partition])), r.Offset, "offsets without gaps")
		out[r.Partition] = append(out[r.Partition], n)
	}
	return out
}

// requireWrittenUpToCommit checks, at a kill, that no offset was committed ahead of the
// writes: every metric of every message below each partition's committed offset is in the
// output files.
func requireWrittenUpToCommit(t *testing.T, srv *testserver.Kafka, group, topic string, firstOf map[int32][]int, files []string) {
	c := countFiles(t, files)
	_, byPart := committed(t, srv, group, topic)
	checked := 0
	for p, off := range byPart {
		for o := range off {
			first := firstOf[p][o]
			for n := first; n < first+perMessage; n++ {
				require.NotZero(t, c.seen[n], "partition %d offset %d is committed, but metric %d was not written", p, o, n)
				checked++
			}
		}
	}
	t.Logf("at the kill: %d metrics of committed messages, all written", checked)
}
