package influxdblistener

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// bomb is a gzip body that inflates to n MiB of valid lines: n copies of one gzip member of
// 1 MiB, which gzip readers read as one stream. Like a bomb's zeros, the lines are mostly
// one repeated byte, so that they compress about a thousandfold.
func bomb(n int) []byte {
	block := []byte("bomb,host=web-01 payload=\"" + strings.Repeat("x", 4000) + "\",value=1i 1700000000000000000\n")
	plain := bytes.Repeat(block, (1<<20)/len(block))
	plain = append(plain, bytes.Repeat([]byte("\n"), (1<<20)-len(plain))...)
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	return bytes.Repeat(z.Bytes(), n)
}

// Under the race detector the resident size counts the detector's shadow memory, several
// times the program's own, and parsing is several times slower: there the concurrent test
// checks the answers and the lines, and the bomb test its memory but not its time. The
// bounds left out are checked by the same tests without -race and by their benchmarks,
// which make bench runs.

// TestGzipBombIsRefusedQuicklyInBoundedMemory: see gzipBomb.
func TestGzipBombIsRefusedQuicklyInBoundedMemory(t *testing.T) {
	gzipBomb(t)
}

// BenchmarkGzipBomb is TestGzipBombIsRefusedQuicklyInBoundedMemory for make bench, which
// runs without the race detector.
func BenchmarkGzipBomb(b *testing.B) {
	for b.Loop() {
		took, growth := gzipBomb(b)
		b.ReportMetric(float64(took.Milliseconds()), "ms-to-413")
		b.ReportMetric(float64(growth)/(1<<20), "peak-MiB")
	}
}

// gzipBomb: a gzip body of about 600 KB that inflates to 400 MiB is refused with 413 once it
// passes max_body_size (32 MiB), in under a second, and the process's peak resident size
// grows by less than 16 MiB over its idle value: the body is parsed in chunks as it
// inflates, never held. The lines before the limit go to an accumulator that only counts
// them. The time is taken to the answer's arrival, over a plain connection: Go's HTTP client
// would add half a second, waiting on the server's close after an answer that left the body
// unread. It returns the time and the growth.
func gzipBomb(t testing.TB) (time.Duration, int64) {
	t.Helper()
	body := bomb(400)
	require.Less(t, len(body), 1<<20, "the body on the wire is small")
	l := newListener(t)
	acc := &counting{}
	require.NoError(t, l.Start(context.Background(), acc))
	t.Cleanup(l.Stop)
	conn, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(waitFor)))
	written := make(chan error, 1)

	idle := testutil.IdleRSS(t)
	begun := time.Now()
	go func() {
		_, err := fmt.Fprintf(conn, "POST /write?db=x HTTP/1.1\r\nHost: morse\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		written <- err // the server stops reading: an error is expected, once it closes
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	took := time.Since(begun)
	require.NoError(t, err)
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	growth := testutil.PeakGrowth(t, idle)
	_ = conn.Close()
	<-written
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", answer)
	require.Contains(t, string(answer), fmt.Sprintf("; %d lines accepted before the limit", acc.n.Load()))
	require.Positive(t, acc.n.Load())
	t.Logf("a body of %d bytes: 413 after %v, peak RSS growth %.1f MiB, %d lines kept", len(body), took,
		float64(growth)/(1<<20), acc.n.Load())
	require.Less(t, growth, int64(16<<20), "holds under the race detector too: the bomb's garbage is small")
	if !raceEnabled {
		require.Less(t, took, time.Second)
	}
	return took, growth
}

// repeatReader reads pattern over and over, n bytes in all, without holding them.
type repeatReader struct {
	pattern []byte
	off     int
	left    int64
}

// Read fills p from the pattern.
func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.pattern[r.off:])
		n += c
		r.off = (r.off + c) % len(r.pattern)
	}
	r.left -= int64(n)
	return n, nil
}

// The concurrent test's clients run in a child process, the test binary itself started
// with clientsEnv set, so that the resident size measured is the listener's alone.
const clientsEnv = "MORSE_TEST_HTTP_CLIENTS" // "url clients size"

// TestMain runs the clients when the test binary is started as the clients' process.
func TestMain(m *testing.M) {
	if spec := os.Getenv(clientsEnv); spec != "" {
		os.Exit(runClients(spec))
	}
	os.Exit(m.Run())
}

// runClients posts one body of size bytes of valid lines per client, all at once, and
// prints each answer's status, or the error, one a line.
func runClients(spec string) int {
	var url string
	var clients int
	var size int64
	if _, err := fmt.Sscan(spec, &url, &clients, &size); err != nil {
		fmt.Println(err)
		return 2
	}
	tr := &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}
	hc := &http.Client{Transport: tr, Timeout: 80 * time.Second}
	out := make([]string, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			req, err := http.NewRequest("POST", url, &repeatReader{pattern: benchBody(), left: size})
			if err != nil {
				out[i] = err.Error()
				return
			}
			req.ContentLength = size
			resp, err := hc.Do(req)
			if err != nil {
				out[i] = err.Error()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			out[i] = strconv.Itoa(resp.StatusCode)
		})
	}
	wg.Wait()
	fmt.Println(strings.Join(out, "\n"))
	return 0
}

// TestConcurrentLargeBodiesInBoundedMemory: 100 clients at once each send a body of 1 MiB
// (256 KiB under the race detector, whose clients are slow too) of valid lines, and each
// gets 204 with every line delivered, in bounded memory; see concurrentBodies.
// BenchmarkConcurrentLargeBodies, in make bench, does the same with bodies of 32 MiB, which
// take a minute on two cores.
func TestConcurrentLargeBodiesInBoundedMemory(t *testing.T) {
	size := int64(1 << 20)
	if raceEnabled {
		size = 256 << 10
	}
	concurrentBodies(t, size)
}

// BenchmarkConcurrentLargeBodies is TestConcurrentLargeBodiesInBoundedMemory with bodies of
// max_body_size, 32 MiB, and reports the listener's peak growth per connection.
func BenchmarkConcurrentLargeBodies(b *testing.B) {
	for b.Loop() {
		growth := concurrentBodies(b, 32<<20)
		b.ReportMetric(float64(growth)/100/1024, "peak-KiB/conn")
	}
}

// concurrentBodies has 100 clients send a body of about size bytes of valid lines at once;
// each must get 204 and every line must be delivered. The accumulator only counts, so
// nothing is buffered, and the listener's peak resident size must grow by no more than a
// constant per connection: 512 KiB each and 16 MiB for the runtime. What a connection holds
// is about 100 KiB (a 64 KiB chunk, the connection's buffers, its goroutine's stack, the
// parser's scratch); the garbage collector lets the heap grow to twice what is live, and
// the garbage of parsing at full speed on two cores fills that room between collections.
// Measured: 332 to 421 KiB a connection with bodies of 32 MiB. The clients are another process, so that the resident size
// measured is the listener's alone. It returns the growth.
func concurrentBodies(t testing.TB, size int64) int64 {
	t.Helper()
	const clients = 100
	pattern := benchBody()
	lines := size / int64(len(pattern)) * 1000
	size = size / int64(len(pattern)) * int64(len(pattern))
	l := newListener(t, func(l *InfluxDBListener) {
		// 100 bodies of 32 MiB share two cores: each takes far longer than 10 s to arrive.
		l.ReadTimeout, l.WriteTimeout = morse.Duration(80*time.Second), morse.Duration(80*time.Second)
	})
	acc := &counting{}
	require.NoError(t, l.Start(context.Background(), acc))
	defer l.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 85*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=http://%s/write?db=x %d %d", clientsEnv, l.Addr(), clients, size))
	idle := testutil.IdleRSS(t)
	begun := time.Now()
	out, err := cmd.Output()
	growth := testutil.PeakGrowth(t, idle)
	require.NoError(t, err, "%s", out)
	statuses := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, statuses, clients)
	for i, s := range statuses {
		require.Equal(t, "204", s, "client %d", i)
	}
	require.Equal(t, clients*lines, acc.n.Load(), "every line of every body")
	t.Logf("%d bodies of %.1f MiB in %v, the listener's peak RSS growth %.1f MiB (%.0f KiB a connection)", clients,
		float64(size)/(1<<20), time.Since(begun), float64(growth)/(1<<20), float64(growth)/clients/1024)
	if !raceEnabled {
		require.Less(t, growth, int64(clients*(512<<10)+16<<20))
	}
	return growth
}
