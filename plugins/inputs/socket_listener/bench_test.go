package socketlistener

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/selfstat"
)

// discard is an accumulator that only counts, so that a benchmark measures the listener.
type discard struct {
	n, target atomic.Int64
	once      sync.Once
	done      chan struct{} // closed when n reaches target
}

func (d *discard) AddMetric(morse.Metric) {
	if d.n.Add(1) == d.target.Load() {
		d.once.Do(func() { close(d.done) })
	}
}

// wait blocks until n metrics have arrived.
func (d *discard) wait(n int64) {
	d.target.Store(n)
	if d.n.Load() < n {
		<-d.done
	}
}

func (d *discard) AddFields(string, map[string]any, map[string]string, ...time.Time) { d.n.Add(1) }
func (d *discard) AddError(error)                                                    {}

// benchLines is 1000 realistic lines: four tags, five fields of mixed types.
func benchLines() []byte {
	var b bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&b, "system_disk,device=nvme0n1p%d,fstype=ext4,host=web-%02d.prod.example.com,region=eu-west-1 "+
			"used_percent=%d.41234567,free=214748364800u,inodes_used=%di,mode=\"rw\",healthy=true %d\n",
			i%4, i%50, i%100, 1234567+i, 1700000000123456789+int64(i))
	}
	return b.Bytes()
}

// BenchmarkTCPStream sends 1000-line chunks over one loopback TCP connection and waits until
// the listener has parsed every line.
func BenchmarkTCPStream(b *testing.B) {
	s := New()
	s.ServiceAddress = "tcp://127.0.0.1:0"
	s.SetLogger(testutil.QuietLogger())
	st := selfstat.NewPluginStats(selfstat.New(), "internal_socket_listener", nil)
	s.SetStats(st)
	if err := s.Init(); err != nil {
		b.Fatal(err)
	}
	acc := &discard{done: make(chan struct{})}
	if err := s.Start(context.Background(), acc); err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	chunk := benchLines()
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	sent := int64(0)
	for b.Loop() {
		if _, err := conn.Write(chunk); err != nil {
			b.Fatal(err)
		}
		sent += 1000
	}
	acc.wait(sent)
	b.StopTimer()
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "lines/s")
	if errs := st.Counter("parse_errors").Get(); errs != 0 {
		b.Fatalf("%d parse errors", errs)
	}
}
