package influxdbv2

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/bench/loadgen"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/outputs/influxdb"
)

// benchBatch is the batch both outputs write: the shape of outputs.influxdb's own benchmark.
func benchBatch() []morse.Metric {
	batch := make([]morse.Metric, 1000)
	for i := range batch {
		batch[i] = morse.NewMetric("cpu",
			[]morse.Tag{{Key: "host", Value: "h" + strconv.Itoa(i%50)}, {Key: "region", Value: "eu"}, {Key: "dc", Value: "a"}},
			[]morse.Field{{Key: "usage", Value: morse.Float(1.5)}, {Key: "n", Value: morse.Int(3)}, {Key: "s", Value: morse.String("ok")}},
			time.Unix(0, int64(i)))
	}
	return batch
}

// The servers and outputs of BenchmarkGzipVsInfluxDB.
var benchSinks = []struct {
	name    string
	handler func() (http.Handler, func() int64)
}{
	{"sink=loadgen", func() (http.Handler, func() int64) {
		s := &loadgen.Sink{}
		return s.Handler(), func() int64 { return s.Stats().Lines }
	}},
	{"sink=discard", func() (http.Handler, func() int64) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		}), nil
	}},
}
var benchOutputs = []struct {
	name string
	make func(b *testing.B, url string) morse.Output
}{
	{"output=influxdb", func(b *testing.B, url string) morse.Output {
		o := influxdb.New()
		o.URLs, o.SkipDatabaseCreation, o.ContentEncoding = []string{url}, true, "gzip"
		require.NoError(b, o.Connect(context.Background()))
		return o
	}},
	{"output=influxdb_v2", func(b *testing.B, url string) morse.Output {
		o := New()
		o.URLs, o.Bucket, o.ContentEncoding = []string{url}, "b", "gzip"
		require.NoError(b, o.Connect(context.Background()))
		return o
	}},
}

// BenchmarkGzipVsInfluxDB measures the CPU per line of outputs.influxdb_v2 with gzip beside
// outputs.influxdb (v1) with gzip, same batch of 1000, against a local HTTP server that
// discards what it gets: loadgen's sink (which gunzips and counts the lines, so both outputs
// also pay for the same server work in this process) and a bare discard (io.Copy of the
// compressed body, so the figure is the output's own). The target is v2 within 10% of v1.
func BenchmarkGzipVsInfluxDB(b *testing.B) {
	batch := benchBatch()
	for _, sk := range benchSinks {
		for _, out := range benchOutputs {
			b.Run(sk.name+"/"+out.name, func(b *testing.B) {
				h, lines := sk.handler()
				srv := httptest.NewServer(h)
				defer srv.Close()
				o := out.make(b, srv.URL)
				defer o.Close()
				ctx := context.Background()
				b.ReportAllocs()
				cpu0 := testutil.CPUTime(b)
				for b.Loop() {
					if err := o.Write(ctx, batch); err != nil {
						b.Fatal(err)
					}
				}
				perLine := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*len(batch)) }
				b.ReportMetric(perLine(b.Elapsed()), "ns/line")
				// CPU time of the whole process (client and server goroutines): on a shared
				// machine it is steadier than the wall clock.
				b.ReportMetric(perLine(testutil.CPUTime(b)-cpu0), "cpu-ns/line")
				if lines != nil {
					require.Equal(b, int64(b.N*len(batch)), lines(), "every line arrived")
				}
			})
		}
	}
}

// threadCPU is the CPU time of the calling OS thread (Linux's RUSAGE_THREAD).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGzipVsInfluxDBInterleaved is the same comparison made as A/B on a shared
// machine: each iteration writes the batch with outputs.influxdb, then with
// outputs.influxdb_v2, on one locked OS thread, and charges each output the CPU time that
// thread spent in its Write (serialization, gzip and the request, not the server's share).
// Other tenants slow both alike, so the ratio is steadier than two separate runs.
func BenchmarkGzipVsInfluxDBInterleaved(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	batch := benchBatch()
	discard, _ := benchSinks[1].handler()
	srv := httptest.NewServer(discard)
	defer srv.Close()
	v1 := benchOutputs[0].make(b, srv.URL)
	v2 := benchOutputs[1].make(b, srv.URL)
	defer v1.Close()
	defer v2.Close()
	ctx := context.Background()
	var spent [2]time.Duration
	b.ReportAllocs()
	for b.Loop() {
		for i, o := range []morse.Output{v1, v2} {
			start := threadCPU()
			if err := o.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
			spent[i] += threadCPU() - start
		}
	}
	lines := float64(b.N * len(batch))
	b.ReportMetric(float64(spent[0].Nanoseconds())/lines, "v1-cpu-ns/line")
	b.ReportMetric(float64(spent[1].Nanoseconds())/lines, "v2-cpu-ns/line")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "v2/v1")
}
