package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkGenerate measures building pools; one op is one line. Pools are built in
// chunks so that a long run does not hold every line in memory at once.
func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	var bytes int
	for done := 0; done < b.N; {
		n := min(b.N-done, 65536)
		p, err := Generate(GenOptions{Seed: uint64(done), Hosts: 1000, Lines: n})
		require.NoError(b, err)
		bytes += len(p.buf)
		done += n
	}
	b.SetBytes(int64(bytes / max(b.N, 1)))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkAppendLines measures what the sender does per line: copy it from the pool and
// stamp it. One op is one line.
func BenchmarkAppendLines(b *testing.B) {
	p, err := Generate(GenOptions{Seed: 1, Hosts: 1000, Lines: 65536})
	require.NoError(b, err)
	buf := make([]byte, 0, 1<<20)
	base := time.Now().UnixNano()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		buf = p.AppendLines(buf[:0], int64(i), min(1000, b.N-i), base)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkSend sends b.N lines flat out over one connection to a discarding loopback
// server. One op is one line.
func BenchmarkSend(b *testing.B) {
	pool, err := Generate(GenOptions{Seed: 1, Hosts: 1000, Lines: 65536})
	require.NoError(b, err)
	for _, tc := range []struct {
		name string
		cfg  func(b *testing.B) Config
	}{
		{"http", func(b *testing.B) Config {
			return Config{Transport: "http", Addr: startSink(b, &Sink{}), Path: "/write", LinesPerRequest: 1000}
		}},
		{"http-gzip", func(b *testing.B) Config {
			return Config{Transport: "http", Addr: startSink(b, &Sink{}), Path: "/write", LinesPerRequest: 1000, Gzip: true}
		}},
		{"tcp", func(b *testing.B) Config {
			return Config{Transport: "tcp", Addr: startTCPCounter(b).ln.Addr().String(), LinesPerRequest: 1000}
		}},
		{"udp", func(b *testing.B) Config {
			return Config{Transport: "udp", Addr: startUDPCounter(b).pc.LocalAddr().String(), LinesPerRequest: 300}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := tc.cfg(b)
			cfg.Connections, cfg.Lines = 1, int64(b.N)
			require.NoError(b, cfg.Validate())
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := Run(context.Background(), cfg, pool)
			require.NoError(b, err)
			b.StopTimer()
			require.Equal(b, int64(b.N), rep.Lines, rep.ErrorSamples)
			b.SetBytes(rep.Bytes / int64(b.N))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
